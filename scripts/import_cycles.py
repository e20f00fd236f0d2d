#!/usr/bin/env python3
"""Import cycles between the source files of a crate.

Reads every .rs file under each crate's src/, resolves every `crate::…`, `super::…` and
`self::…` path in it (use lines and inline paths alike) to the file of the module it names,
and prints each strongly connected component of more than one file: a set of files that
import each other round a circle. Exits 1 when there is one, except the pairs allowed by
`--allow a.rs,b.rs` (a type and its guard). Unit-test modules (`tests.rs`, and anything
after a `#[cfg(test)]` line) are left out: tests may import anything.

Usage: scripts/import_cycles.py [--allow buffer/pool.rs,buffer/guard.rs] crates/engine/src ...
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{")


def module_files(src):
    """module path tuple -> file (relative to src)."""
    mods = {}
    has_lib = os.path.exists(os.path.join(src, "lib.rs"))
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            if has_lib and root == src and f == "main.rs":
                continue  # the binary: a crate of its own that uses the library by name
            rel = os.path.relpath(os.path.join(root, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            mods[tuple(parts)] = rel
    return mods


def own_module(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def strip(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    i = text.find("#[cfg(test)]")
    return text if i < 0 else text[:i]


def resolve(mods, here, kind, segs):
    if kind == "crate":
        base = ()
    elif kind == "self":
        base = here
    else:
        base = here[:-1]
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
    full = base + tuple(segs)
    # the longest prefix that is a module file
    for n in range(len(full), -1, -1):
        if full[:n] in mods:
            return mods[full[:n]]
    return None


def expand_groups(text):
    """`use crate::a::{b, c::d}` -> crate::a::b crate::a::c::d (one level of braces, nested ok)."""
    out = []
    for m in GROUP.finditer(text):
        start = m.end()
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        inner = text[start : i - 1]
        prefix = m.group(1) + m.group(2)
        for item in split_top(inner):
            item = item.strip()
            if not item or item == "self":
                out.append(prefix)
                continue
            out.append(prefix + "::" + item)
    return out


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def paths_of(text, here, mods):
    """Every path in `text` that starts at crate, super, self or a child module of `here`."""
    children = {m[-1] for m in mods if len(m) == len(here) + 1 and m[: len(here)] == here}
    if children:
        alt = "|".join(sorted(children))
        text = re.sub(r"(?<![:\w])(" + alt + r")::", r"self::\1::", text)
    paths = [m.group(0) for m in PATH.finditer(text)]
    paths += expand_groups(text)
    out = []
    for p in paths:
        p = re.sub(r"\{.*", "", p)
        segs = [s for s in p.split("::") if s]
        out.append((segs[0], [s for s in segs[1:] if re.match(r"^[A-Za-z_]\w*$", s)]))
    return out


REEXPORT = re.compile(r"pub(?:\([^)]*\))?\s+use\s+([^;]+);")


def reexports(src, mods):
    """module -> {item name: (kind, segments)} of its `pub use` lines."""
    out = {}
    for m, f in mods.items():
        text = strip(open(os.path.join(src, f)).read())
        children = {c[-1] for c in mods if len(c) == len(m) + 1 and c[: len(m)] == m}
        table = {}
        for u in REEXPORT.finditer(text):
            body = u.group(1).strip()
            first = body.split("::")[0]
            if first in children:
                body = "self::" + body
            for kind, segs in paths_of(body, m, {}) if body.startswith(("crate", "super", "self")) else []:
                if segs and segs[-1] not in children:
                    table[segs[-1]] = (kind, segs)
        out[m] = table
    return out


def resolve_item(mods, rex, here, kind, segs, depth=0):
    target = resolve(mods, here, kind, list(segs))
    if target is None or depth > 8:
        return target
    mod = own_module(target)
    # the segment after the module's own path names an item: follow a re-export of it
    if kind == "crate":
        full = tuple(segs)
    elif kind == "self":
        full = here + tuple(segs)
    else:
        base, s = here[:-1], list(segs)
        while s and s[0] == "super":
            base, s = base[:-1], s[1:]
        full = base + tuple(s)
    rest = full[len(mod):]
    if rest and rest[0] in rex.get(mod, {}):
        k, sg = rex[mod][rest[0]]
        return resolve_item(mods, rex, mod, k, sg, depth + 1) or target
    return target


def graph(src):
    mods = module_files(src)
    rex = reexports(src, mods)
    edges = {f: set() for f in mods.values()}
    for m, f in mods.items():
        if os.path.basename(f) == "tests.rs":
            continue
        # A `pub use` re-export is not a use: a path through it is followed to the file
        # that defines the item (resolve_item), so the re-export line itself adds no edge.
        full = strip(open(os.path.join(src, f)).read())
        text = REEXPORT.sub("", full)
        body = re.sub(r"\b(use|mod)\s+[^;]+;", "", text)
        for name, (kind, segs) in rex.get(m, {}).items():
            # a re-exported name the file also uses itself is an import as well
            if re.search(r"\b" + re.escape(name) + r"\b", body):
                text += f"\n{kind}::{'::'.join(segs)}\n"
        for kind, segs in paths_of(text, m, mods):
            target = resolve_item(mods, rex, m, kind, segs)
            if target and target != f and os.path.basename(target) != "tests.rs":
                edges[f].add(target)
    return edges


def sccs(edges):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [sorted(c) for c in out if len(c) > 1]


def main(argv):
    allow = []
    args = []
    it = iter(argv)
    for a in it:
        if a == "--allow":
            allow.append(frozenset(next(it).split(",")))
        else:
            args.append(a)
    bad = 0
    for src in args:
        edges = graph(src)
        n_edges = sum(len(v) for v in edges.values())
        comps = sccs(edges)
        print(f"{src}: {len(edges)} files, {n_edges} file-to-file imports, {len(comps)} circle(s)")
        for c in comps:
            allowed = frozenset(c) in allow
            # show the edges inside the component
            inside = [f"{a} -> {b}" for a in c for b in sorted(edges[a]) if b in c]
            print(f"  {'allowed' if allowed else 'CIRCLE'}: {', '.join(c)}")
            for e in inside:
                print(f"      {e}")
            bad += 0 if allowed else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
