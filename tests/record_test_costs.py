#!/usr/bin/env python3
"""Writes tests/test_costs.txt, the seconds each slow CTest entry took, from a CTest run's JUnit
report. CTest starts the entries with the highest cost first, so that on 2 cores a long entry
does not start last and run alone; it keeps its own record of past runs too, but that record
cannot hold names with spaces (the Catch cases'), and a fresh clone has none.

  cd build && ctest -j2 --output-junit ctest.xml
  python3 tests/record_test_costs.py build/ctest.xml     [--min-seconds 2]
"""
import argparse
import pathlib
import xml.etree.ElementTree as ElementTree


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=pathlib.Path, help="the report of ctest --output-junit")
    parser.add_argument("--min-seconds", type=float, default=2.0,
                        help="entries quicker than this are left out (they run in any order)")
    parser.add_argument("--output", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent / "test_costs.txt")
    args = parser.parse_args()
    cases = ElementTree.parse(args.junit).getroot().iter("testcase")
    costs = sorted(((float(case.get("time")), case.get("name")) for case in cases), reverse=True)
    kept = [(seconds, name) for seconds, name in costs if seconds >= args.min_seconds]
    if not kept:
        raise SystemExit(f"record_test_costs: no entry of {args.junit} took {args.min_seconds} s")
    for seconds, name in kept:
        if "\t" in name or "\n" in name:
            raise SystemExit(f"record_test_costs: a test name holds a tab or newline: {name!r}")
    lines = ["# Seconds each CTest entry took on 2 cores (tests/record_test_costs.py): CTest starts",
             "# the costliest first. Entries not listed cost nothing and start after these.",
             *(f"{seconds:.1f}\t{name}" for seconds, name in kept)]
    args.output.write_text("\n".join(lines) + "\n")
    print(f"record_test_costs: {len(kept)} entries of {len(costs)} into {args.output}")


if __name__ == "__main__":
    main()
