// Test helpers: a fresh `s3q dev` on a free port per test file, the repo's
// paths, and polling.

import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { answerChecker } from "./answers.js";

/** The repository's root (this file runs from clients/typescript/dist/test/). */
export const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
/** The package's root (clients/typescript/). */
export const pkgRoot = fileURLToPath(new URL("../../", import.meta.url));

/** A loopback port nothing listens on. */
export async function freePort(): Promise<number> {
  const srv: Server = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const addr = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return addr.port;
}

/** A running s3q dev. */
export interface Dev {
  /** Its URL through the proxy that checks every answer against the OpenAPI document (answers.ts). */
  url: string;
  /** Its own URL. */
  direct: string;
  proc: ChildProcess;
  log(): string;
}

/**
 * Starts a fresh `s3q dev` (the binary the Makefile builds into .bin/, or
 * S3Q_BIN) on a free port, with sweep and tick every second, behind the
 * proxy that checks its answers against the document; it stops with the
 * test process.
 */
export async function startDev(extra: string[] = []): Promise<Dev> {
  const bin = process.env.S3Q_BIN || `${repoRoot}.bin/s3q`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(bin, ["dev", "--addr", `127.0.0.1:${port}`, "--tick", "1s", ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
    // Lambda targets are invoked through the AWS SDK, which signs: any credentials do locally.
    env: { AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local", AWS_REGION: "us-east-1", ...process.env },
  });
  let out = "";
  proc.stdout?.on("data", (b: Buffer) => (out = (out + b.toString()).slice(-20000)));
  proc.stderr?.on("data", (b: Buffer) => (out = (out + b.toString()).slice(-20000)));
  // Ends with the test process (which the child does not keep alive).
  process.on("exit", () => proc.kill("SIGTERM"));
  proc.unref();
  for (const s of [proc.stdout, proc.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`s3q dev exited ${proc.exitCode}:\n${out}`);
    try {
      const r = await fetch(`${url}/queues`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`s3q dev does not answer on ${url}:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const checker = await answerChecker(url);
  process.on("exit", () => checker.close());
  return { url: checker.url, direct: url, proc, log: () => out };
}

/** Polls fn until it returns a value other than undefined (or throws after timeoutMs). */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A unique queue name. */
export function queueName(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Registers the test of a scenario of contract/scenarios.json, named
 * "scenario <name>" (the coverage test finds these calls in the sources).
 */
export function scenario(name: string, fn: () => Promise<void>): void {
  void test(`scenario ${name}`, fn);
}
