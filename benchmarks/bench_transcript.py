"""How long `acp chat` takes to show one more update in a long session.

A headless Textual app holds the chat's Transcript widget over a session of
``--entries`` transcript entries (prompts, thoughts, tool calls, answers: 4 per
turn). Then, ``--appends`` times, one ``agent_message_chunk`` is folded into the
state and shown, and two times are taken per append:

* ``sync``: the widget bringing its lines up to date (what the app does per batch);
* ``screen``: the same plus Textual's refresh of the screen (``pilot.pause()``),
  next to a refresh with nothing changed (the floor of what the test pilot measures).

For comparison, ``redraw all`` is the time to lay out every entry once, which is what
the app did on every change before the widget drew incrementally.

    .venv/bin/python benchmarks/bench_transcript.py [--entries 10000] [--appends 50]

Figures are printed, not asserted: they depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from rich.segment import Segment
from textual.app import App, ComposeResult

from acpwire import schema as s
from acpwire.cli import render
from acpwire.cli.chat.widgets import Transcript
from acpwire.client.state import SessionState


class TranscriptApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


def session(entries: int) -> SessionState:
    state = SessionState("sess_bench")
    for i in range(entries // 4):
        state.begin_turn(f"question {i}: what does module {i} do?")
        state.apply(s.AgentThoughtChunk(content=s.TextContent(text=f"Looking at module {i}.")))
        state.apply(
            s.ToolCallStart(
                tool_call_id=f"t{i}",
                title=f"Read src/module_{i}.py",
                kind="read",
                status="completed",
            )
        )
        text = f"Module {i} parses **input** and writes `output`; see `src/module_{i}.py`."
        state.apply(s.AgentMessageChunk(content=s.TextContent(text=text)))
        state.end_turn("end_turn")
    return state


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


async def measure(entries: int, appends: int) -> None:
    state = session(entries)
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        transcript = app.query_one(Transcript)
        state.subscribe(lambda _state, update: transcript.entry_changed(update))
        started = time.perf_counter()
        transcript.show_state(state)
        await pilot.pause()
        first_draw = time.perf_counter() - started

        syncs: list[float] = []
        screens: list[float] = []
        layouts_before = transcript.layouts
        for i in range(appends):
            started = time.perf_counter()
            state.apply(s.AgentMessageChunk(content=s.TextContent(text=f" more {i}")))
            transcript.sync()
            synced = time.perf_counter()
            await pilot.pause()
            done = time.perf_counter()
            syncs.append(synced - started)
            screens.append(done - started)
        layouts = transcript.layouts - layouts_before
        idle: list[float] = []
        for _ in range(appends):
            started = time.perf_counter()
            transcript.refresh()
            await pilot.pause()
            idle.append(time.perf_counter() - started)

        console = app.console
        options = console.options.update_width(transcript.scrollable_content_region.width)
        started = time.perf_counter()
        for entry in state.transcript:
            renderable = render.render_entry(entry, state.terminals)
            list(
                Segment.split_and_crop_lines(console.render(renderable, options), options.max_width)
            )
        redraw_all = time.perf_counter() - started

    sync_median = statistics.median(syncs)
    screen_median = statistics.median(screens)
    print(f"transcript of {len(state.transcript):,} entries, {appends} appends of one chunk")
    print(f"  first draw of the whole session      {ms(first_draw)}")
    print(f"  append, sync only      median {ms(sync_median)}  max {ms(max(syncs))}")
    print(f"  append, with screen    median {ms(screen_median)}  max {ms(max(screens))}")
    print(f"  screen refresh alone   median {ms(statistics.median(idle))}  (no change: the floor)")
    print(f"  entries laid out per append          {layouts / appends:8.2f}")
    print(f"  redraw all (the app before)          {ms(redraw_all)}")
    print(f"  redraw all / append with screen      {redraw_all / screen_median:8.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(measure(args.entries, args.appends))


if __name__ == "__main__":
    main()
