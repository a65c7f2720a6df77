// tiktoken_bench.mjs: encode_ordinary throughput of the tiktoken npm package (WASM),
// as a baseline for frontier's tokenizer.
//
//   node tiktoken_bench.mjs TOKDIR [--threads N] [--repeat R] FILE...
//
// Loads TOKDIR and FILEs like tiktoken_encode.mjs, runs one warm-up pass, then
// times R passes over all documents and keeps the best (load time excluded).
// With N > 1 the documents are split by size across N worker_threads, each with
// its own Tiktoken (and WASM instance); a pass lasts until the last worker is done.
// Prints one JSON line: {"impl":"tiktoken-npm","version",...,"mb_per_s",...} (MB = 1e6 bytes).

import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { loadTokenizer, readDocuments, tiktokenVersion } from "./tiktoken_encode.mjs";

function encodeAll(enc, docs) {
  let tokens = 0;
  for (const doc of docs) tokens += enc.encode_ordinary(doc).length;
  return tokens;
}

if (!isMainThread) {
  // Worker: load, say ready, then encode our share once per "run" message.
  const enc = loadTokenizer(workerData.dir);
  parentPort.on("message", (msg) => {
    if (msg === "run") return parentPort.postMessage(encodeAll(enc, workerData.docs));
    enc.free();
    parentPort.close();
  });
  parentPort.postMessage("ready");
} else {
  try {
    await main(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`tiktoken_bench: error: ${e.message}\n`);
    process.exit(1);
  }
}

function positiveInt(s, name) {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${s}`);
  return n;
}

// Split docs into n shares of roughly equal UTF-8 size (largest first, to the lightest share).
function split(docs, n) {
  const shares = Array.from({ length: n }, () => ({ docs: [], bytes: 0 }));
  const sized = docs.map((d) => [Buffer.byteLength(d, "utf8"), d]).sort((a, b) => b[0] - a[0]);
  for (const [bytes, doc] of sized) {
    const s = shares.reduce((a, b) => (b.bytes < a.bytes ? b : a));
    s.docs.push(doc);
    s.bytes += bytes;
  }
  return shares.map((s) => s.docs);
}

function nextMessage(worker) {
  return new Promise((resolve, reject) => {
    const onMsg = (m) => { worker.off("error", onErr); resolve(m); };
    const onErr = (e) => { worker.off("message", onMsg); reject(e); };
    worker.once("message", onMsg);
    worker.once("error", onErr);
  });
}

async function main(argv) {
  const files = [];
  let threads = 1, repeat = 3;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--threads") threads = positiveInt(argv[++i], "--threads");
    else if (argv[i] === "--repeat") repeat = positiveInt(argv[++i], "--repeat");
    else if (argv[i].startsWith("--")) throw new Error(`unknown option ${argv[i]}`);
    else files.push(argv[i]);
  }
  const dir = files.shift();
  if (!dir || files.length === 0)
    throw new Error("usage: node tiktoken_bench.mjs TOKDIR [--threads N] [--repeat R] FILE...");

  const docs = readDocuments(files).texts;
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);
  let pass, cleanup;
  if (threads === 1) {
    const enc = loadTokenizer(dir);
    pass = async () => encodeAll(enc, docs);
    cleanup = async () => enc.free();
  } else {
    const workers = split(docs, threads).map(
      (share) => new Worker(new URL(import.meta.url), { workerData: { dir, docs: share } }));
    await Promise.all(workers.map(nextMessage)); // "ready"
    pass = async () => {
      const done = workers.map(nextMessage);
      for (const w of workers) w.postMessage("run");
      return (await Promise.all(done)).reduce((a, b) => a + b, 0);
    };
    cleanup = async () => {
      for (const w of workers) w.postMessage("stop");
      await Promise.all(workers.map((w) => new Promise((r) => w.once("exit", r))));
    };
  }

  let tokens = await pass(); // warm-up
  let best = Infinity;
  for (let r = 0; r < repeat; r++) {
    const t0 = performance.now();
    const n = await pass();
    best = Math.min(best, (performance.now() - t0) / 1e3);
    if (n !== tokens) throw new Error(`token count changed between passes: ${tokens} vs ${n}`);
  }
  await cleanup();
  process.stderr.write(`tiktoken_bench: ${docs.length} documents, best of ${repeat}\n`);
  console.log(JSON.stringify({
    impl: "tiktoken-npm", version: tiktokenVersion(), threads, bytes,
    seconds: Number(best.toFixed(6)), mb_per_s: Number((bytes / best / 1e6).toFixed(3)), tokens,
  }));
}
