#!/usr/bin/env python3
"""Strict JSON check for the hostile-sync tests (Python 3 standard library only): an independent parser,
so the catalog's own reader is not the judge of the catalog's own writer.

Usage: strict_json.py FILE
Exit 0 and print "ok" when FILE is one JSON value (RFC 8259) in which no object repeats a key;
exit 1 and print "duplicate key 'K' in an object with keys [...]" for the first repeated key;
exit 2 and print the parser's message when FILE is not JSON (NaN and Infinity are refused too).
"""
import json
import sys


class Duplicate(Exception):
    pass


def pairs(items):
    seen = set()
    for key, _ in items:
        if key in seen:
            raise Duplicate("duplicate key %r in an object with keys %r" % (key, [k for k, _ in items]))
        seen.add(key)
    return dict(items)


def refuse_constant(name):
    raise ValueError("not JSON: %s" % name)


with open(sys.argv[1], "rb") as f:
    text = f.read().decode("utf-8")
try:
    json.loads(text, object_pairs_hook=pairs, parse_constant=refuse_constant)
except Duplicate as error:
    print(error)
    sys.exit(1)
except ValueError as error:
    print("invalid JSON: %s" % error)
    sys.exit(2)
print("ok")
