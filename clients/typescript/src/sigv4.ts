// SigV4 signing for API Gateway IAM auth (service execute-api), with the AWS
// SDK v3 signer and credential chain. This module is imported only when the
// client signs (an AWS URL, or sigv4: true), so the SDK packages load only
// then.

import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";

/** AWS credentials, as the AWS SDK v3 credential providers return them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  expiration?: Date | undefined;
}

/** A source of AWS credentials: fixed ones, or a provider such as the SDK's fromIni() or fromNodeProviderChain(). */
export type AwsCredentialsSource = AwsCredentials | (() => Promise<AwsCredentials>);

/** A request to sign. */
export interface SignInput {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string | undefined;
}

/** Signs requests; made once per client. */
export type Signer = (req: SignInput) => Promise<Record<string, string>>;

/** The region of an {api}.execute-api.{region}.amazonaws.com host, or "". */
export function regionFromHost(host: string): string {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(host.toLowerCase())?.[1] ?? "";
}

/** Node's SHA-256 (and HMAC-SHA256 when given a secret), in the shape the SDK's signer takes. */
class Sha256 {
  private h: Hash | Hmac;
  private readonly secret: Buffer | undefined;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.secret = secret === undefined ? undefined : typeof secret === "string" ? Buffer.from(secret, "utf8") : ArrayBuffer.isView(secret) ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength) : Buffer.from(secret);
    this.h = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash("sha256") : createHmac("sha256", this.secret);
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.h.update(typeof data === "string" ? data : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
  reset(): void {
    this.h = this.fresh();
  }
}

/** Makes the signer of a client: region and credentials given, or from the environment and the default chain. */
export async function makeSigner(region: string, credentials: AwsCredentialsSource | undefined): Promise<Signer> {
  const { SignatureV4 } = await import("@smithy/signature-v4");
  let provider: () => Promise<AwsCredentials>;
  if (credentials === undefined) {
    const { defaultProvider } = await import("@aws-sdk/credential-provider-node");
    provider = defaultProvider();
  } else if (typeof credentials === "function") {
    provider = credentials;
  } else {
    const fixed = credentials;
    provider = () => Promise.resolve(fixed);
  }
  const signer = new SignatureV4({ service: "execute-api", region, credentials: provider, sha256: Sha256 });
  return async (req) => {
    const query: Record<string, string> = {};
    req.url.searchParams.forEach((v, k) => {
      query[k] = v;
    });
    const signed = await signer.sign({
      method: req.method,
      protocol: req.url.protocol,
      hostname: req.url.hostname,
      port: req.url.port ? Number(req.url.port) : undefined,
      path: req.url.pathname,
      query,
      headers: { ...req.headers, host: req.url.host },
      body: req.body,
    });
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(signed.headers)) {
      if (k.toLowerCase() !== "host") out[k] = String(v);
    }
    return out;
  };
}
