#!/usr/bin/env python3
"""Generate s3q/models.py from the OpenAPI document.

Every schema of ``components.schemas`` becomes a ``TypedDict`` (an enum a
``Literal``), and every inline object inside one a ``TypedDict`` named after
its place (``StatsReply.stats`` is ``StatsReplyStats``). The models are the
JSON the API sends and takes, as plain dicts: nothing is converted, so a
date-time stays a string. ``OPERATIONS`` lists every operation of the
document (operationId, method, path, tags) and ``PATTERNS`` every string
pattern it publishes.

    python3 scripts/genmodels.py            # write s3q/models.py
    python3 scripts/genmodels.py --check    # exit 1 when the file differs

Standard library only; Python 3.9 or later.
"""

from __future__ import annotations

import argparse
import json
import keyword
import pathlib
import sys
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
DOC = ROOT / "shared" / "api" / "openapi.json"
OUT = HERE.parent / "s3q" / "models.py"
METHODS = ("get", "put", "post", "delete", "patch")


class Gen:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.blocks: list[str] = []
        self.done: set[str] = set()
        self.patterns: dict[str, str] = {}

    def type_of(self, s: dict[str, Any], name: str) -> str:
        if "$ref" in s:
            return str(s["$ref"].rsplit("/", 1)[1])
        if "enum" in s and all(isinstance(v, str) for v in s["enum"]):
            return "Literal[" + ", ".join(json.dumps(v) for v in s["enum"]) + "]"
        t = s.get("type")
        types = t if isinstance(t, list) else [t] if t else []
        parts = [self.one(s, x, name) for x in types if x != "null"]
        if not parts:
            return "JSON"
        out = parts[0] if len(parts) == 1 else "Union[" + ", ".join(parts) + "]"
        if "null" in types:
            out = "Optional[" + out + "]"
        return out

    def one(self, s: dict[str, Any], t: str, name: str) -> str:
        if t == "string":
            return "str"
        if t == "integer":
            return "int"
        if t == "number":
            return "float"
        if t == "boolean":
            return "bool"
        if t == "array":
            return "List[" + self.type_of(s.get("items", {}), name + "Item") + "]"
        if t == "object":
            if "properties" in s:
                self.typed_dict(name, s)
                return name
            extra = s.get("additionalProperties")
            if isinstance(extra, dict):
                return "Dict[str, " + self.type_of(extra, name + "Value") + "]"
            return "Dict[str, JSON]"
        return "JSON"

    def typed_dict(self, name: str, s: dict[str, Any]) -> None:
        if name in self.done:
            return
        self.done.add(name)
        props: dict[str, Any] = s.get("properties", {})
        required = [p for p in s.get("required", []) if p in props]
        fields = []
        for p in sorted(props):
            ps = props[p]
            for k in ("pattern",):
                if k in ps:
                    self.patterns[name + "." + p] = ps[k]
            sub = name + "".join(w.capitalize() for w in p.split("_"))
            fields.append((p, self.type_of(ps, sub), ps.get("description", "")))
        doc = s.get("description", "")
        lines: list[str] = []
        plain = all(p.isidentifier() and not keyword.iskeyword(p) for p, _, _ in fields)
        if not plain or not fields:
            # Names Python cannot spell in a class body: the functional form.
            lines.append(f"{name} = TypedDict(")
            lines.append(f"    {name!r},")
            lines.append("    {")
            for p, t, _ in fields:
                lines.append(f"        {p!r}: {t!r},")
            lines.append("    },")
            lines.append(f"    total={len(required) == len(fields)},")
            lines.append(")")
            if doc:
                lines.insert(0, "# " + doc)
            self.blocks.append("\n".join(lines))
            return
        base = "TypedDict"
        if required and len(required) < len(fields):
            base = f"_{name}Required"
            lines.append(f"class {base}(TypedDict):")
            for p, t, d in fields:
                if p in required:
                    lines.append(f"    {p}: {t}")
                    if d:
                        lines.append(f"    {doc_string(d)}")
            lines.append("")
            lines.append("")
        total = "" if len(required) == len(fields) else ", total=False"
        lines.append(f"class {name}({base}{total}):")
        lines.append(f"    {doc_string(doc or 'The ' + name + ' object of the API.')}")
        lines.append("")
        for p, t, d in fields:
            if base != "TypedDict" and p in required:
                continue
            lines.append(f"    {p}: {t}")
            if d:
                lines.append(f"    {doc_string(d)}")
        self.blocks.append("\n".join(lines))

    def run(self) -> str:
        schemas: dict[str, Any] = self.doc.get("components", {}).get("schemas", {})
        aliases = []
        for name in sorted(schemas):
            s = schemas[name]
            if "enum" in s or "properties" not in s:
                t = self.type_of(s, name)
                if t == name:  # an object with properties under another name
                    continue
                aliases.append(f"{name} = {t}")
                if s.get("description"):
                    aliases[-1] += "  # " + s["description"]
            else:
                self.typed_dict(name, s)
        # Stable names for the objects inside a schema, whether the document names them
        # (a $ref) or not: History_versions_item is the type of History.versions' items.
        paths = []
        for name in sorted(schemas):
            for prop, ps in sorted(schemas[name].get("properties", {}).items()):
                inner, suffix = ps, ""
                if ps.get("type") == "array":
                    inner, suffix = ps.get("items", {}), "_item"
                if "$ref" in inner or "properties" in inner:
                    sub = name + "".join(w.capitalize() for w in prop.split("_")) + ("Item" if suffix else "")
                    target = self.type_of(inner, sub)
                    paths.append(f"{name}_{prop}{suffix} = {target}")
        ops = []
        for path, item in sorted(self.doc.get("paths", {}).items()):
            for m in METHODS:
                if m in item:
                    o = item[m]
                    ops.append((o.get("operationId", ""), m.upper(), path, tuple(o.get("tags", []))))
        out = [HEADER]
        out.append("\n".join(aliases))
        out.extend(self.blocks)
        out.append("# The types inside each schema, by Schema_field (_item: of an array's items).\n" + "\n".join(paths))
        op_lines = ["OPERATIONS: Tuple[Operation, ...] = ("]
        for op in ops:
            op_lines.append(f"    Operation({op[0]!r}, {op[1]!r}, {op[2]!r}, {op[3]!r}),")
        op_lines.append(")")
        op_lines.insert(0, OP_DOC)
        out.append("\n".join(op_lines))
        pat = ["PATTERNS: Dict[str, str] = {"]
        for k in sorted(self.patterns):
            pat.append(f"    {k!r}: {self.patterns[k]!r},")
        pat.append("}")
        pat.insert(0, "# The string patterns the document publishes, by Schema.field.")
        out.append("\n".join(pat))
        version = self.doc.get("info", {}).get("version", "")
        out.append(f"DOCUMENT_VERSION = {version!r}")
        return "\n\n\n".join(out) + "\n"


def doc_string(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    return '"""' + text[0].upper() + text[1:] + ("" if text.endswith(".") else ".") + '"""'


HEADER = '''"""The API's JSON, typed: generated from shared/api/openapi.json.

Do not edit: run ``python3 scripts/genmodels.py`` (``make test`` checks that
this file matches the document).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, NamedTuple, Optional, Tuple, TypedDict, Union

JSON = Any
"""Any JSON value."""'''

OP_DOC = '''class Operation(NamedTuple):
    """One operation of the document."""

    operation_id: str
    method: str
    path: str
    tags: Tuple[str, ...]


# Every operation of the document, by path.'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    ap.add_argument("--doc", default=str(DOC))
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    text = Gen(json.loads(pathlib.Path(a.doc).read_text())).run()
    out = pathlib.Path(a.out)
    if a.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} does not match {a.doc}: run python3 scripts/genmodels.py", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
