"""The smallest useful ACP agent: it says back what you typed. Run: python examples/echo_agent.py"""

from acpwire.agent import AgentApp, Turn

app = AgentApp("echo", title="Echo")


@app.prompt
async def echo(turn: Turn) -> None:
    await turn.say(f"You said: {turn.text}")


if __name__ == "__main__":
    app.run()
