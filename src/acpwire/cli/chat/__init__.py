"""``acp chat``: one turn printed (:mod:`.oneshot`) or the interactive Textual app (:mod:`.app`).

:mod:`.session` holds what both share and needs neither Rich nor Textual.
"""
