// Fails when the public surface (the .d.ts tsc emits for src/) names the type
// `any`: comments are stripped first, then every remaining `any` word is one.
import { readdirSync, readFileSync } from "node:fs";

const dir = new URL("../dist/src/", import.meta.url);
let bad = 0;
for (const f of readdirSync(dir).filter((f) => f.endsWith(".d.ts"))) {
  const code = readFileSync(new URL(f, dir), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "))
    .replace(/\/\/.*$/gm, "")
    .replace(/"(?:[^"\\\n]|\\.)*"/g, '""');
  code.split("\n").forEach((line, i) => {
    if (/\bany\b/.test(line)) {
      console.error(`dist/src/${f}:${i + 1}: any in the public surface: ${line.trim()}`);
      bad++;
    }
  });
}
if (bad > 0) process.exit(1);
console.log("no-any: the public surface names no any");
