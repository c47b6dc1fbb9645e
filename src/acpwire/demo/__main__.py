"""``python -m acpwire.demo``: serve the demo agent on stdin/stdout."""

from . import main

if __name__ == "__main__":
    main()
