#!/usr/bin/env python3
"""Validates a state directory's paired.json and pending.json against pairing/schemas/ with the
independent `jsonschema` package.  Usage: validate_state.py STATE_DIR"""
import json
import os
import sys

import jsonschema
from referencing import Registry, Resource

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "pairing", "schemas")


def main():
    schemas = {}
    for name in ("paired", "pending"):
        with open(os.path.join(SCHEMAS, name + ".schema.json")) as f:
            schemas[name] = json.load(f)
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
    for name, schema in schemas.items():
        with open(os.path.join(sys.argv[1], name + ".json")) as f:
            document = json.load(f)
        jsonschema.Draft202012Validator(schema, registry=registry).validate(document)
        print("valid %s.json" % name)


if __name__ == "__main__":
    main()
