// tests/report/render_check.mjs — check that a Chromium screenshot of the report shows the page.
//
// usage: node render_check.mjs FILE.png WIDTH HEIGHT
// Decodes the PNG with Node's zlib only (8-bit RGB/RGBA, not interlaced: what Chromium writes),
// checks the size, and counts pixels in the charts' line/bar blue (#2f6db5) and the val_bpb red
// (#c8393b): a page whose SVG did not render has none. Prints the counts; exit 1 on failure.
import { readFileSync } from "node:fs";
import { inflateSync } from "node:zlib";

const [file, wantW, wantH] = process.argv.slice(2);
const fail = (msg) => { console.error(`render_check: ${file}: ${msg}`); process.exit(1); };
const buf = readFileSync(file);
const SIG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
if (buf.length < 64 || !buf.subarray(0, 8).equals(SIG)) fail("not a PNG");

let w = 0, h = 0, depth = 0, ctype = 0, interlace = 0;
const idat = [];
for (let off = 8; off + 8 <= buf.length;) {
  const len = buf.readUInt32BE(off), type = buf.toString("latin1", off + 4, off + 8);
  const data = buf.subarray(off + 8, off + 8 + len);
  if (type === "IHDR") {
    w = data.readUInt32BE(0); h = data.readUInt32BE(4); depth = data[8]; ctype = data[9]; interlace = data[12];
  } else if (type === "IDAT") idat.push(data);
  else if (type === "IEND") break;
  off += 12 + len;
}
if (wantW && w !== +wantW) fail(`width ${w}, expected ${wantW}`);
if (wantH && h !== +wantH) fail(`height ${h}, expected ${wantH}`);
if (depth !== 8 || (ctype !== 2 && ctype !== 6) || interlace) fail(`unsupported PNG (depth ${depth}, colour type ${ctype})`);

const bpp = ctype === 6 ? 4 : 3, stride = w * bpp;
const raw = inflateSync(Buffer.concat(idat));
if (raw.length < h * (stride + 1)) fail("truncated image data");
const img = Buffer.alloc(h * stride);
for (let y = 0; y < h; y++) {
  const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1, dst = y * stride, up = dst - stride;
  for (let i = 0; i < stride; i++) {
    const a = i >= bpp ? img[dst + i - bpp] : 0, b = y ? img[up + i] : 0, c = i >= bpp && y ? img[up + i - bpp] : 0;
    let p = raw[src + i];
    if (f === 1) p += a;
    else if (f === 2) p += b;
    else if (f === 3) p += (a + b) >> 1;
    else if (f === 4) {
      const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
      p += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
    } else if (f !== 0) fail(`bad filter ${f} in row ${y}`);
    img[dst + i] = p & 255;
  }
}

const near = (i, r, g, b) => Math.abs(img[i] - r) + Math.abs(img[i + 1] - g) + Math.abs(img[i + 2] - b) < 40;
let blue = 0, red = 0, ink = 0;
for (let i = 0; i < img.length; i += bpp) {
  if (near(i, 0x2f, 0x6d, 0xb5)) blue++;
  if (near(i, 0xc8, 0x39, 0x3b)) red++;
  if (img[i] + img[i + 1] + img[i + 2] < 600) ink++;  // anything clearly darker than the light backgrounds
}
console.log(`${file}: ${w}x${h}, chart-blue ${blue} px, val_bpb-red ${red} px, ink ${ink} px`);
if (blue < 3000) fail(`only ${blue} pixels of the charts' blue: the SVG plots did not render`);
if (red < 50) fail(`only ${red} pixels of the val_bpb red: the val_bpb line did not render`);
if (ink < 20000) fail(`only ${ink} non-background pixels: the page looks empty`);
