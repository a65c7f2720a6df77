// tests/profile/devtools_import.mjs — import a trace.json with the trace engine of Chromium's
// DevTools Performance panel (npm @paulirish/trace_engine, the same code Chromium ships), and
// check every complete ("X") event came through on its lane with no import warnings.
//
//   node devtools_import.mjs TRACE.json      -> one JSON line; exit 1 on any mismatch
import fs from "node:fs";
import { analyzeTrace } from "@paulirish/trace_engine/analyze-trace.mjs";

const path = process.argv[2];
if (!path) { console.error("usage: node devtools_import.mjs TRACE.json"); process.exit(2); }
const events = JSON.parse(fs.readFileSync(path, "utf8")).traceEvents;
const want = events.filter((e) => e.ph === "X").length;
const { parsedTrace } = await analyzeTrace(path);
const d = parsedTrace.data ?? parsedTrace;
let got = 0, lanes = 0;
for (const [, p] of d.Renderer.processes)
  for (const [, t] of p.threads) { lanes++; got += (t.entries || []).length; }
const warnings = [...(d.Warnings?.perWarning?.keys?.() ?? [])];
console.log(JSON.stringify({ spans_in_file: want, spans_imported: got, lanes, warnings }));
process.exit(got === want && want > 0 && warnings.length === 0 ? 0 : 1);
