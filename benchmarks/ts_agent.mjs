#!/usr/bin/env node
// Benchmark agent on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// stable v1 app API): agent().onRequest(...).connect(ndJsonStream(stdout, stdin)).
//
// Prompt "stream N" sends N agent_message_chunk updates (64 bytes of text each)
// before answering end_turn; any other prompt answers end_turn at once (_ts_bench.mjs).

import { Readable, Writable } from "node:stream";

import { acp, createBenchAgent } from "./_ts_bench.mjs";

const connection = createBenchAgent().connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);
