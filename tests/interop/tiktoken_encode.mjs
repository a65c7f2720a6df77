// tiktoken_encode.mjs: reference encoder for frontier's tokenizer interop test.
//
//   node tiktoken_encode.mjs TOKDIR --out IDS.bin FILE...
//
// Loads frontier's tokenizer directory (tokenizer.tiktoken + tokenizer.json)
// into the tiktoken npm package (OpenAI's tiktoken compiled to WASM), encodes
// every document with encode_ordinary (special tokens are never parsed out of
// text) and writes all ids, document after document, as little-endian uint32.
// A FILE ending in .txt is one document; any other FILE is JSON Lines with a
// string "text" field per line (blank lines are skipped).
//
// Also exports loadTokenizer/readDocuments/tiktokenVersion for tiktoken_bench.mjs.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Tiktoken } from "tiktoken/lite"; // same Rust core as "tiktoken", without the bundled OpenAI vocabularies

export function tiktokenVersion() {
  const require = createRequire(import.meta.url);
  const pkg = path.join(path.dirname(require.resolve("tiktoken")), "package.json");
  return JSON.parse(fs.readFileSync(pkg, "utf8")).version;
}

function readText(file) {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`cannot read ${file}: ${e.message}`);
  }
}

// Returns a Tiktoken; the caller should .free() it (WASM memory is not garbage collected promptly).
// The WASM constructor panics with an uninformative "unreachable" on bad input, so check first.
export function loadTokenizer(dir) {
  const jsonPath = path.join(dir, "tokenizer.json");
  const ranksPath = path.join(dir, "tokenizer.tiktoken");
  let cfg;
  try {
    cfg = JSON.parse(readText(jsonPath));
  } catch (e) {
    throw new Error(e.message.startsWith("cannot read") ? e.message : `${jsonPath}: bad JSON: ${e.message}`);
  }
  if (typeof cfg.pattern !== "string") throw new Error(`${jsonPath}: missing string "pattern"`);
  const special = cfg.special_tokens;
  if (special === null || typeof special !== "object" || Array.isArray(special))
    throw new Error(`${jsonPath}: missing object "special_tokens"`);

  // tokenizer.tiktoken: "base64(bytes) rank\n" with ranks 0..n-1 in order, ranks 0..255 = bytes 0..255.
  const ranks = readText(ranksPath);
  const lines = ranks.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const seen = new Set();
  lines.forEach((line, i) => {
    const m = /^([A-Za-z0-9+/]+={0,2}) (\d+)$/.exec(line);
    if (!m) throw new Error(`${ranksPath}:${i + 1}: expected "BASE64 RANK"`);
    if (Number(m[2]) !== i) throw new Error(`${ranksPath}:${i + 1}: rank ${m[2]}, expected ${i}`);
    const bytes = Buffer.from(m[1], "base64");
    if (i < 256 && !(bytes.length === 1 && bytes[0] === i))
      throw new Error(`${ranksPath}:${i + 1}: rank ${i} must be the single byte ${i}`);
    const key = bytes.toString("latin1");
    if (bytes.length === 0 || seen.has(key)) throw new Error(`${ranksPath}:${i + 1}: empty or duplicate token`);
    seen.add(key);
  });
  if (lines.length < 256) throw new Error(`${ranksPath}: only ${lines.length} ranks, need at least the 256 bytes`);

  let maxId = lines.length - 1;
  const ids = new Set();
  for (const [name, id] of Object.entries(special)) {
    if (!Number.isInteger(id) || id < lines.length || ids.has(id))
      throw new Error(`${jsonPath}: special token ${name} has id ${id}: must be a unique integer >= ${lines.length}`);
    ids.add(id);
    maxId = Math.max(maxId, id);
  }
  if (Number.isInteger(cfg.vocab_size) && cfg.vocab_size <= maxId)
    throw new Error(`${jsonPath}: vocab_size ${cfg.vocab_size} but ids go up to ${maxId}`);

  try {
    // The constructor takes the .tiktoken text as is (it also accepts a "!"-prefixed compressed form).
    return new Tiktoken(ranks, special, cfg.pattern);
  } catch (e) {
    throw new Error(`tiktoken rejected ${dir} (${e.message}); is the pattern valid for Rust fancy-regex?`);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }); // keep a BOM as text

function decodeUtf8(bytes, where) {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new Error(`${where}: invalid UTF-8`);
  }
}

// Returns the documents of all FILEs, in order: texts (JS strings, each valid Unicode)
// and origins ("file" or "file:line", for error messages).
export function readDocuments(files) {
  const texts = [], origins = [];
  for (const file of files) {
    let buf;
    try {
      buf = fs.readFileSync(file);
    } catch (e) {
      throw new Error(`cannot read ${file}: ${e.message}`);
    }
    if (file.endsWith(".txt")) {
      texts.push(decodeUtf8(buf, file));
      origins.push(file);
      continue;
    }
    let start = 0;
    for (let lineNo = 1; start < buf.length; lineNo++) {
      let end = buf.indexOf(0x0a, start);
      if (end < 0) end = buf.length;
      const where = `${file}:${lineNo}`;
      const line = decodeUtf8(buf.subarray(start, end), where);
      start = end + 1;
      if (line.trim() === "") continue;
      let obj;
      try {
        obj = JSON.parse(line);
      } catch (e) {
        throw new Error(`${where}: bad JSON: ${e.message}`);
      }
      if (obj === null || typeof obj.text !== "string") throw new Error(`${where}: no string "text" field`);
      // A lone surrogate escape ("\ud800") has no UTF-8 form; tiktoken would silently see U+FFFD.
      if (!obj.text.isWellFormed()) throw new Error(`${where}: "text" contains a lone UTF-16 surrogate`);
      texts.push(obj.text);
      origins.push(where);
    }
  }
  return { texts, origins };
}

function main(argv) {
  const files = [];
  let out = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--out") out = argv[++i];
    else if (argv[i].startsWith("--")) throw new Error(`unknown option ${argv[i]}`);
    else files.push(argv[i]);
  }
  const dir = files.shift();
  if (!dir || !out || files.length === 0) throw new Error("usage: node tiktoken_encode.mjs TOKDIR --out IDS.bin FILE...");

  const { texts, origins } = readDocuments(files);
  const enc = loadTokenizer(dir);
  let fd;
  try {
    fd = fs.openSync(out, "w");
  } catch (e) {
    throw new Error(`cannot write ${out}: ${e.message}`);
  }
  let bytes = 0, tokens = 0;
  try {
    for (const [i, doc] of texts.entries()) {
      let ids;
      try {
        ids = enc.encode_ordinary(doc);
      } catch (e) {
        // A Rust panic surfaces as "RuntimeError: unreachable", e.g. when fancy-regex hits its
        // backtrack limit (a whitespace run of ~1e6 chars); the WASM instance is unusable afterwards.
        throw new Error(`${origins[i]}: tiktoken failed (${e.constructor.name}: ${e.message})`);
      }
      const raw = Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength);
      if (os.endianness() === "BE") raw.swap32();
      fs.writeSync(fd, raw);
      bytes += Buffer.byteLength(doc, "utf8");
      tokens += ids.length;
    }
  } catch (e) {
    fs.rmSync(out, { force: true }); // no half-written output
    throw e;
  } finally {
    fs.closeSync(fd);
    try {
      enc.free();
    } catch {} // after a panic, free() throws too
  }
  process.stderr.write(
    `tiktoken_encode: ${texts.length} documents, ${bytes} bytes, ${tokens} tokens` +
      ` (${(bytes / Math.max(tokens, 1)).toFixed(3)} bytes/token) -> ${out}\n`);
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`tiktoken_encode: error: ${e.message}\n`);
    process.exit(1);
  }
}
