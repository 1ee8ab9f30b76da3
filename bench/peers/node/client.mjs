// The TypeScript SDK row of plexus's peer bench (bench/peers, `cargo xtask bench --peers`).
//
// Usage: node client.mjs WORKLOAD_JSON
//   WORKLOAD_JSON: {"transport":"stdio"|"http","testserver":PATH,"url":URL,"warmup":N,"calls":N,
//                   "in_flight":N,"phase_limit_ms":N,"min_calls":N}
// The SDK is imported from the directory in PLEXUS_TS_SDK_DIR (its installed package).
// Connects (spawn or HTTP, initialize, tools/list), makes `warmup` echo calls, `calls`
// sequential ones (timed one by one), then `calls` more with `in_flight` at once (each phase
// stopping early, after at least `min_calls`, once it has run `phase_limit_ms`, as the Rust rows
// do: bench/peers/src/drive.rs), and prints
// one JSON line: connect_ms, p50_us, p99_us, cpu_us (this process's CPU per sequential call),
// calls_per_s, peak_rss_kib (VmHWM). Errors go to stderr with exit status 1.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

function fail(message) {
  process.stderr.write(`ts-sdk client: ${message}\n`);
  process.exit(1);
}

function parseWorkload(text) {
  let workload;
  try {
    workload = JSON.parse(text ?? "");
  } catch (error) {
    fail(`the workload argument is not JSON (${error.message}): ${text}`);
  }
  for (const key of ["warmup", "calls", "in_flight", "phase_limit_ms", "min_calls"]) {
    if (!Number.isInteger(workload[key]) || workload[key] < (key === "warmup" ? 0 : 1)) {
      fail(`workload.${key} must be a positive integer, not ${JSON.stringify(workload[key])}`);
    }
  }
  if (workload.transport === "stdio" && typeof workload.testserver !== "string") {
    fail("workload.testserver (the test server's path) is needed over stdio");
  }
  if (workload.transport === "http" && typeof workload.url !== "string") {
    fail("workload.url is needed over http");
  }
  if (workload.transport !== "stdio" && workload.transport !== "http") {
    fail(`workload.transport must be "stdio" or "http", not ${JSON.stringify(workload.transport)}`);
  }
  return workload;
}

async function importSdk(file) {
  const dir = process.env.PLEXUS_TS_SDK_DIR;
  if (!dir) {
    fail("PLEXUS_TS_SDK_DIR (the installed @modelcontextprotocol/sdk package) is not set");
  }
  return import(pathToFileURL(join(dir, "dist", "esm", "client", file)).href);
}

function peakRssKib() {
  const status = readFileSync("/proc/self/status", "utf8");
  const line = status.split("\n").find((l) => l.startsWith("VmHWM:"));
  return line ? Number(line.split(/\s+/)[1]) : null;
}

function percentile(sorted, p) {
  return sorted[Math.round((sorted.length - 1) * p)];
}

const workload = parseWorkload(process.argv[2]);
const { Client } = await importSdk("index.js");
const client = new Client({ name: "plexus-peer-bench", version: "0" });

const connectStarted = process.hrtime.bigint();
let transport;
if (workload.transport === "stdio") {
  const { StdioClientTransport } = await importSdk("stdio.js");
  transport = new StdioClientTransport({ command: workload.testserver, args: ["stdio"], stderr: "ignore" });
} else {
  const { StreamableHTTPClientTransport } = await importSdk("streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(workload.url));
}
await client.connect(transport);
const tools = await client.listTools();
if (!tools.tools.some((tool) => tool.name === "echo")) {
  fail("the test server's tools/list has no echo");
}
const connectMs = Number(process.hrtime.bigint() - connectStarted) / 1e6;

async function echo() {
  const result = await client.callTool({ name: "echo", arguments: { text: "hello" } });
  if (result.isError) {
    fail(`echo answered an error: ${JSON.stringify(result)}`);
  }
}

for (let i = 0; i < workload.warmup; i++) {
  await echo();
}
const limitNs = BigInt(workload.phase_limit_ms) * 1_000_000n;
const all = new Float64Array(workload.calls);
let timed = 0;
const cpuBefore = process.cpuUsage();
const phaseStarted = process.hrtime.bigint();
while (timed < workload.calls) {
  if (timed >= workload.min_calls && process.hrtime.bigint() - phaseStarted >= limitNs) {
    break;
  }
  const started = process.hrtime.bigint();
  await echo();
  all[timed++] = Number(process.hrtime.bigint() - started) / 1e3;
}
const cpu = process.cpuUsage(cpuBefore);
const times = all.subarray(0, timed).sort();

// The throughput phase: each worker takes calls from one counter until `calls` are taken, or
// the limit has passed once `min_calls` were.
let taken = 0;
let made = 0;
const throughputStarted = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: workload.in_flight }, async () => {
    for (;;) {
      const number = taken++;
      const late = process.hrtime.bigint() - throughputStarted >= limitNs;
      if (number >= workload.calls || (number >= workload.min_calls && late)) {
        return;
      }
      await echo();
      made++;
    }
  }),
);
const seconds = Number(process.hrtime.bigint() - throughputStarted) / 1e9;

const figures = {
  connect_ms: connectMs,
  p50_us: percentile(times, 0.5),
  p99_us: percentile(times, 0.99),
  cpu_us: (cpu.user + cpu.system) / timed,
  calls_per_s: made / seconds,
  peak_rss_kib: peakRssKib(),
};
await client.close();
process.stdout.write(`${JSON.stringify(figures)}\n`);
