// A proxy in front of s3q dev that checks every JSON answer the tests see
// against the OpenAPI document: the schema of the operation's response for
// that status. An answer that does not match (or a status the operation does
// not declare) reaches the client as a 502 whose error code is
// schema_violation, naming the route and what differs, so the test that
// caused it fails.

import { readFileSync } from "node:fs";
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { Ajv2020 } from "ajv/dist/2020.js";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));

interface Op {
  method: string;
  re: RegExp;
  path: string;
  responses: Record<string, { $ref?: string; content?: Record<string, { schema?: unknown }> }>;
}

const doc = JSON.parse(readFileSync(`${repoRoot}shared/api/openapi.json`, "utf8")) as {
  paths: Record<string, Record<string, { responses?: Op["responses"] }>>;
};

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(doc, "openapi.json");

const ops: Op[] = [];
for (const [path, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (!op.responses) continue;
    const re = new RegExp("^" + path.replace(/\{[^}]+\}/g, "[^/]+") + "$");
    ops.push({ method: method.toUpperCase(), re, path, responses: op.responses });
  }
}
// Literal segments win over parameters (/tasks/batch before /tasks/{id}).
ops.sort((a, b) => b.path.replace(/\{[^}]+\}/g, "").length - a.path.replace(/\{[^}]+\}/g, "").length);

const esc = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/** The JSON pointer of the schema of an operation's answer for status, or undefined when it declares none. */
function schemaRef(op: Op, status: number): string | undefined {
  const key = op.responses[String(status)] ? String(status) : op.responses.default ? "default" : undefined;
  if (!key) return undefined;
  let ptr = `#/paths/${esc(op.path)}/${op.method.toLowerCase()}/responses/${key}`;
  let r = op.responses[key]!;
  if (r.$ref) {
    ptr = r.$ref;
    const parts = r.$ref.slice(2).split("/");
    let v: unknown = doc;
    for (const p of parts) v = (v as Record<string, unknown>)[p.replace(/~1/g, "/").replace(/~0/g, "~")];
    r = v as typeof r;
  }
  if (!r.content?.["application/json"]?.schema) return "none";
  return `openapi.json${ptr}/content/application~1json/schema`;
}

/** Checks one answer; returns what is wrong, or undefined. */
export function checkAnswer(method: string, path: string, status: number, body: string): string | undefined {
  const op = ops.find((o) => o.method === method && o.re.test(path));
  if (!op) return status === 404 || status === 405 ? undefined : `${method} ${path}: no operation of the document`;
  const ref = schemaRef(op, status);
  if (ref === undefined) return `${method} ${op.path}: status ${status} is not in the document`;
  if (ref === "none" || body === "") return undefined;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return `${method} ${op.path} ${status}: the answer is not JSON`;
  }
  if (validate(value)) return undefined;
  return `${method} ${op.path} ${status}: ${ajv.errorsText(validate.errors)}`;
}

/** Starts the checking proxy in front of target; answers that break the document become 502 schema_violation. */
export async function answerChecker(target: string): Promise<{ url: string; close: () => void }> {
  const t = new URL(target);
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    const up = request({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers }, (ur) => {
      const chunks: Buffer[] = [];
      ur.on("data", (c: Buffer) => chunks.push(c));
      ur.on("end", () => {
        const body = Buffer.concat(chunks);
        const path = new URL(req.url ?? "/", "http://x").pathname;
        const json = String(ur.headers["content-type"] ?? "").includes("application/json");
        const wrong = json && !path.startsWith("/ui") ? checkAnswer(req.method ?? "GET", path, ur.statusCode ?? 0, body.toString("utf8")) : undefined;
        if (wrong) {
          res.writeHead(502, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { code: "schema_violation", message: wrong } }));
          return;
        }
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        res.end(body);
      });
    });
    up.on("error", () => res.socket?.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const a = srv.address();
  if (a === null || typeof a === "string") throw new Error("no address");
  srv.unref();
  return {
    url: `http://127.0.0.1:${a.port}`,
    close: () => {
      srv.closeAllConnections();
      srv.close();
    },
  };
}
