#!/usr/bin/env python3
"""Parses Prometheus' text exposition format with the prometheus_client package's own parser (PyPI
`prometheus_client`), so the catalog's writer is judged by the reference client, not by itself.

Usage: prometheus_text.py FILE     print the families as JSON: [{"name", "type", "help",
                                   "samples": [{"name", "labels", "value"}]}]; exit 1 when the parser
                                   refuses the text (its message on stderr)
       prometheus_text.py --probe  exit 0 when prometheus_client can be imported
Exit 3 with a message when prometheus_client cannot be imported (pip install prometheus_client).
"""
import json
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as error:  # the tests skip themselves, saying so
    print("prometheus_client cannot be imported (%s): pip install prometheus_client" % error, file=sys.stderr)
    sys.exit(3)

if sys.argv[1:] == ["--probe"]:
    sys.exit(0)

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
try:
    families = [
        {"name": f.name, "type": f.type, "help": f.documentation,
         "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
        for f in text_string_to_metric_families(text)
    ]
except Exception as error:
    print("not valid exposition text: %s" % error, file=sys.stderr)
    sys.exit(1)
json.dump(families, sys.stdout, sort_keys=True)
