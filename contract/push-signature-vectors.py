#!/usr/bin/env python3
"""Writes contract/push-signature-vectors.json.

The signatures are computed here with Python's hmac, independently of the
Go signer (shared/pushsig), which must reproduce them; each verifying
vector's outcome is declared by hand, not computed by a verifier. Run it
again only to add vectors: `python3 contract/push-signature-vectors.py`.
"""
import base64
import hashlib
import hmac
import json
import os

ABOUT = [
    "Test vectors for the signature of an HTTPS push delivery (docs/push.md, 'Signatures that bind'). Every s3q client's verifier (and the Go signer) must pass them all.",
    "sign: each vector gives secret, timestamp (Unix seconds), method, url, queue, task_id, attempt and the body; 'signature' is the exact S3q-Signature header value the signer writes: t=<timestamp>,v1=<64 lowercase hex digits>.",
    "The signed string is the lines v1, timestamp, method, url, queue, task_id, attempt, each followed by one LF (\\n), then the body's exact bytes with nothing after them; v1 is HMAC-SHA256 of it keyed with the secret's UTF-8 bytes. 'signed_string_base64' gives the signed string's exact bytes.",
    "Bodies: 'body_base64' is always the exact bytes; 'body' is the same bytes as a string and is present only when they are valid UTF-8. A verifier must be given the bytes, never a re-serialised object.",
    "verify: each vector is a delivery (method, headers, body) arriving at a receiver configured with url, queue, secrets (the first is the current secret; a second one is the previous secret still accepted while the secret is rotated) and tolerance_seconds, at time now (Unix seconds). Header names compare case-insensitively. The outcome is either ok: true with task_id and attempt (the delivery's idempotency key), or ok: false with error, one of:",
    "  no_secret: the receiver's (first) secret is empty; nothing can verify with it.",
    "  target: the receiver has no url or no queue configured.",
    "  missing: S3q-Signature, S3q-Queue, S3q-Task-Id or S3q-Attempt is absent or empty; the signature header has no t= or no v1=, or more than one t=; or S3q-Attempt is not a canonical positive decimal ([1-9][0-9]*, so 02, +2, 0 and 2.0 are refused).",
    "  bad_time: t= is not a canonical decimal ([1-9][0-9]*), or is more than tolerance_seconds from now either way (exactly tolerance_seconds away is accepted).",
    "  queue: S3q-Queue differs from the receiver's queue.",
    "  signature: no v1= value equals the lowercase hex HMAC of the signed string built from t, the request's method, the receiver's url and queue, the task id and attempt of the headers, and the body.",
    "The checks run in that order, so a delivery with several faults gets the first error in the list; most vectors have one fault. The header is parts separated by commas, each key=value with spaces around a part ignored; parts whose key is neither t nor v1 (v2=..., or anything else) are ignored; several v1= values may appear and one matching is enough.",
    "The url and queue a signature is checked against come from the receiver's own configuration, never from the request: S3q-Queue is compared with the configured queue, and the URL the request arrived at is not used."
]

T = 1769590800
URL = "https://hooks.example.com/s3q/orders"
QUEUE = "orders"
TASK = "01943a5e-0000-7000-8000-000000000001"
SECRET = "whsec-current"
OLD = "whsec-previous"
BODY = ('{"task":{"id":"01943a5e-0000-7000-8000-000000000001","queue":"orders","type":"email.send",'
        '"payload":{"to":"a@example.com","note":"caf\u00e9 \u2713"},"status":"running","attempt":2,"max_attempts":3,'
        '"created_at":"2026-01-28T08:59:00Z","updated_at":"2026-01-28T09:00:00Z"},'
        '"lease":{"task_id":"01943a5e-0000-7000-8000-000000000001","token":"0194-lease","expires_at":"2026-01-28T09:01:00Z"},'
        '"deadline":"2026-01-28T09:00:58Z"}').encode("utf-8")


def signed_string(t, method, url, queue, task_id, attempt, body):
    head = "\n".join(["v1", str(t), method, url, queue, task_id, str(attempt)]) + "\n"
    return head.encode("utf-8") + body


def mac(secret, msg):
    return hmac.new(secret.encode("utf-8"), msg, hashlib.sha256).hexdigest()


def sig(secret, t=T, method="POST", url=URL, queue=QUEUE, task_id=TASK, attempt=2, body=BODY):
    return mac(secret, signed_string(t, method, url, queue, task_id, attempt, body))


def body_fields(body):
    out = {"body_base64": base64.b64encode(body).decode("ascii")}
    try:
        out["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return out


def sign_vector(name, secret, t, method, url, queue, task_id, attempt, body):
    s = signed_string(t, method, url, queue, task_id, attempt, body)
    v = {"name": name, "secret": secret, "timestamp": t, "method": method, "url": url,
         "queue": queue, "task_id": task_id, "attempt": attempt}
    v.update(body_fields(body))
    v["signed_string_base64"] = base64.b64encode(s).decode("ascii")
    v["signature"] = "t=%d,v1=%s" % (t, mac(secret, s))
    return v


signs = [
    sign_vector("documented_example", "whsec-example", T, "POST", URL, QUEUE, TASK, 2, b'{"task":{}}'),
    sign_vector("delivery_body_with_non_ascii_text", SECRET, T, "POST", URL, QUEUE, TASK, 2, BODY),
    sign_vector("empty_body", SECRET, T, "POST", URL, QUEUE, TASK, 1, b""),
    sign_vector("body_ending_in_a_newline", SECRET, T, "POST", URL, QUEUE, TASK, 1, b'{"task":{}}\n'),
    sign_vector("body_not_utf8", SECRET, T, "POST", URL, QUEUE, TASK, 1, b'\xff\xfe\x00{"a":1}\r\n'),
    sign_vector("secret_non_ascii", "s\u00e9cret-\u043a\u043b\u044e\u0447-\u2713", T, "POST", URL, QUEUE, TASK, 1, b'{"task":{}}'),
    sign_vector("secret_longer_than_the_hmac_block", "k" * 100 + "-end", T, "POST", URL, QUEUE, TASK, 1, b'{"task":{}}'),
    sign_vector("url_with_port_path_and_query", SECRET, 1893456000, "POST",
                "https://hooks.example.com:8443/s3q/in?team=a&x=%2F", "team-a.orders_v2", "01943a5e-ffff-7fff-bfff-ffffffffffff", 10, b'{"task":{}}'),
    sign_vector("attempt_one_at_an_early_time", SECRET, 1000000000, "POST", "http://127.0.0.1:9000/", "mail", TASK, 1, b'{}'),
]


def headers(t=T, v1s=None, queue=QUEUE, task_id=TASK, attempt="2", sig_value=None):
    if v1s is None:
        v1s = [sig(SECRET, t=t)]
    if sig_value is None:
        sig_value = "t=%s," % t + ",".join("v1=" + v for v in v1s)
    h = {"S3q-Signature": sig_value, "S3q-Queue": queue, "S3q-Task-Id": task_id, "S3q-Attempt": attempt}
    return {k: v for k, v in h.items() if v is not None}


def verify(name, h=None, body=BODY, method="POST", url=URL, queue=QUEUE, secrets=(SECRET,),
           tolerance=300, now=T + 60, error=None, task_id=TASK, attempt=2):
    v = {"name": name, "method": method, "headers": headers() if h is None else h}
    v.update(body_fields(body))
    v["receiver"] = {"url": url, "queue": queue, "secrets": list(secrets), "tolerance_seconds": tolerance}
    v["now"] = now
    if error is None:
        v.update({"ok": True, "task_id": task_id, "attempt": attempt})
    else:
        v.update({"ok": False, "error": error})
    return v


good = sig(SECRET)
verifies = [
    verify("ok"),
    verify("ok_now_equals_timestamp", now=T),
    verify("ok_at_the_tolerance_in_the_past", now=T + 300),
    verify("ok_at_the_tolerance_in_the_future", now=T - 300),
    verify("timestamp_too_old", now=T + 301, error="bad_time"),
    verify("timestamp_too_far_in_the_future", now=T - 301, error="bad_time"),
    verify("ok_within_a_shorter_tolerance", tolerance=60, now=T + 60),
    verify("timestamp_outside_a_shorter_tolerance", tolerance=60, now=T + 61, error="bad_time"),
    verify("timestamp_changed_in_the_header", h=headers(t=T + 1, v1s=[good]), error="signature"),
    verify("timestamp_with_a_plus_sign", h=headers(sig_value="t=+%d,v1=%s" % (T, good)), error="bad_time"),
    verify("timestamp_with_a_leading_zero", h=headers(sig_value="t=0%d,v1=%s" % (T, good)), error="bad_time"),
    verify("timestamp_not_a_number", h=headers(sig_value="t=soon,v1=%s" % good), error="bad_time"),
    verify("timestamp_with_a_fraction", h=headers(sig_value="t=%d.0,v1=%s" % (T, good)), error="bad_time"),
    verify("url_other_than_signed", url="https://hooks.example.com/s3q/billing", error="signature"),
    verify("url_with_a_trailing_slash_added", url=URL + "/", error="signature"),
    verify("url_with_another_case", url="https://HOOKS.example.com/s3q/orders", error="signature"),
    verify("queue_header_for_another_queue", h=headers(queue="billing"), error="queue"),
    verify("queue_header_rewritten_to_the_receivers_queue", h=headers(queue="billing"), queue="billing", error="signature"),
    verify("task_id_changed", h=headers(task_id="01943a5e-0000-7000-8000-000000000002"), error="signature"),
    verify("attempt_changed", h=headers(attempt="3"), error="signature"),
    verify("attempt_with_a_leading_zero", h=headers(attempt="02"), error="missing"),
    verify("attempt_with_a_plus_sign", h=headers(attempt="+2"), error="missing"),
    verify("attempt_zero", h=headers(attempt="0", v1s=[sig(SECRET, attempt=0)]), error="missing"),
    verify("attempt_with_a_fraction", h=headers(attempt="2.0"), error="missing"),
    verify("attempt_not_a_number", h=headers(attempt="two"), error="missing"),
    verify("body_changed", body=BODY.replace(b"a@example.com", b"b@example.com"), error="signature"),
    verify("body_with_a_newline_added", body=BODY + b"\n", error="signature"),
    verify("body_reserialised", body=json.dumps(json.loads(BODY), indent=1).encode("utf-8"), error="signature"),
    verify("method_changed", method="PUT", error="signature"),
    verify("wrong_secret", secrets=("whsec-other",), error="signature"),
    verify("no_secret", secrets=("",), error="no_secret"),
    verify("no_target_url", url="", error="target"),
    verify("no_target_queue", queue="", error="target"),
    verify("rotation_two_v1_values_receiver_has_the_new_secret", h=headers(v1s=[sig(OLD), good])),
    verify("rotation_two_v1_values_receiver_has_the_old_secret", h=headers(v1s=[sig(OLD), good]), secrets=(OLD,)),
    verify("rotation_receiver_has_two_secrets_signed_with_the_old", h=headers(v1s=[sig(OLD)]), secrets=(SECRET, OLD)),
    verify("rotation_receiver_has_two_secrets_signed_with_the_new", secrets=(SECRET, OLD)),
    verify("rotation_receiver_has_two_secrets_signed_with_a_third", h=headers(v1s=[sig("whsec-third")]), secrets=(SECRET, OLD), error="signature"),
    verify("header_names_in_lower_case", h={k.lower(): v for k, v in headers().items()}),
    verify("header_names_in_upper_case", h={k.upper(): v for k, v in headers().items()}),
    verify("header_name_misspelled", h={("S3q-Signatures" if k == "S3q-Signature" else k): v for k, v in headers().items()}, error="missing"),
    verify("header_name_prefixed", h={("X-S3q-Signature" if k == "S3q-Signature" else k): v for k, v in headers().items()}, error="missing"),
    verify("signature_header_missing", h={k: v for k, v in headers().items() if k != "S3q-Signature"}, error="missing"),
    verify("queue_header_missing", h={k: v for k, v in headers().items() if k != "S3q-Queue"}, error="missing"),
    verify("task_id_header_missing", h={k: v for k, v in headers().items() if k != "S3q-Task-Id"}, error="missing"),
    verify("attempt_header_missing", h={k: v for k, v in headers().items() if k != "S3q-Attempt"}, error="missing"),
    verify("signature_without_t", h=headers(sig_value="v1=" + good), error="missing"),
    verify("signature_without_v1", h=headers(sig_value="t=%d" % T), error="missing"),
    verify("signature_with_two_t", h=headers(sig_value="t=%d,t=%d,v1=%s" % (T, T, good)), error="missing"),
    verify("unknown_version_before_v1_is_ignored", h=headers(sig_value="t=%d,v2=%s,v1=%s" % (T, "ab" * 32, good))),
    verify("unknown_parts_are_ignored", h=headers(sig_value="t=%d,v1=%s,foo=bar,nokey" % (T, good))),
    verify("only_an_unknown_version", h=headers(sig_value="t=%d,v2=%s" % (T, good)), error="missing"),
    verify("spaces_around_parts", h=headers(sig_value="t=%d, v1=%s " % (T, good))),
    verify("v1_in_upper_case_hex", h=headers(v1s=[good.upper()]), error="signature"),
    verify("v1_truncated", h=headers(v1s=[good[:-2]]), error="signature"),
    verify("v1_empty", h=headers(sig_value="t=%d,v1=" % T), error="signature"),
    verify("empty_body_signed", h=headers(v1s=[sig(SECRET, body=b"")]), body=b""),
]

names = [v["name"] for v in signs + verifies]
assert len(names) == len(set(names)), "duplicate vector names"
doc = {"about": ABOUT, "sign": signs, "verify": verifies}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "push-signature-vectors.json")
with open(out, "w", encoding="utf-8") as f:
    json.dump(doc, f, indent=2, ensure_ascii=False)
    f.write("\n")
print("%s: %d sign, %d verify vectors" % (out, len(signs), len(verifies)))
