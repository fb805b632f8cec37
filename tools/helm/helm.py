"""The Helm commands tiny's charts need (lint, template, install, upgrade, history, uninstall) on Helm v4's
Go SDK through helm-python-sdk. Run through `tools/helm/helm`, which installs it."""

import argparse
import json
import sys

import helm_python as helm


def values_of(files):
    """Merges the values files in order, as `helm -f a -f b` does (maps deep, the rest replaced)."""
    merged = {}

    def merge(into, new):
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    for path in files or []:
        with open(path, encoding="utf-8") as f:
            merge(merged, helm.values_from_yaml(f.read()) or {})
    return merged


def lint(args):
    report = helm.lint(args.chart, values_of(args.values), strict=True, namespace=args.namespace)
    problems = 0
    for m in report.get("messages", []):
        label = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}.get(m.get("severity"), "?")
        print(f"[{label}] {m.get('path', '')}: {m.get('error', '')}")
        problems += m.get("severity", 0) >= 2
    for e in report.get("errors", []) or []:
        print(f"[ERROR] {e}")
        problems += 1
    print(f"{args.chart}: {report.get('total_charts_linted', 0)} chart(s) linted, {problems} problem(s)")
    return 1 if problems else 0


def template(args):
    chart = helm.Chart.load(args.chart)
    values = values_of(args.values)
    chart.validate_schema(values)
    rendered = chart.render(values, name=args.name, namespace=args.namespace, is_install=True)
    for path in sorted(rendered):
        body = rendered[path].strip()
        if path.endswith("NOTES.txt") or not body:
            continue
        print(f"---\n# Source: {path}\n{body}")
    return 0


def config(args):
    return helm.Config(kubeconfig_path=args.kubeconfig, namespace=args.namespace)


def install(args):
    with config(args) as cfg:
        release = cfg.install(
            args.chart,
            args.name,
            values_of(args.values),
            namespace=args.namespace,
            create_namespace=args.create_namespace,
            timeout=args.timeout,
        )
    info = release.get("info", {})
    print(f"installed {args.name} in {args.namespace}: {info.get('status', release.get('status', ''))}")
    return 0


def upgrade(args):
    with config(args) as cfg:
        release = cfg.upgrade(
            args.chart,
            args.name,
            values_of(args.values),
            namespace=args.namespace,
            timeout=args.timeout,
        )
    info = release.get("info", {})
    print(f"upgraded {args.name} in {args.namespace}: {info.get('status', release.get('status', ''))}")
    return 0


def history(args):
    """The release's revisions as JSON, oldest first: `[{"revision": 1, "status": "deployed"}, ...]`."""
    with config(args) as cfg:
        releases = cfg.history(args.name)
    revisions = sorted(
        ({"revision": r["revision"], "status": r["status"]} for r in releases),
        key=lambda r: r["revision"],
    )
    print(json.dumps(revisions))
    return 0


def uninstall(args):
    with config(args) as cfg:
        cfg.uninstall(args.name, timeout=args.timeout)
    print(f"uninstalled {args.name} from {args.namespace}")
    return 0


def main():
    parser = argparse.ArgumentParser(prog="helm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("lint", help="lint a chart (strict: warnings fail)")
    p.add_argument("chart")
    p.add_argument("-f", "--values", action="append")
    p.add_argument("--namespace", default="tinysystems")
    p.set_defaults(run=lint)

    p = sub.add_parser("template", help="render a chart's manifests, sorted by template")
    p.add_argument("chart")
    p.add_argument("--name", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("-f", "--values", action="append")
    p.set_defaults(run=template)

    for name, run in (("install", install), ("upgrade", upgrade), ("history", history), ("uninstall", uninstall)):
        p = sub.add_parser(name)
        if name in ("install", "upgrade"):
            p.add_argument("chart")
            p.add_argument("-f", "--values", action="append")
            if name == "install":
                p.add_argument("--create-namespace", action="store_true")
        p.add_argument("name")
        p.add_argument("--namespace", required=True)
        p.add_argument("--kubeconfig")
        p.add_argument("--timeout", type=int, default=120)
        if name == "history":
            p.add_argument("-o", "--output", choices=["json"], default="json")
        p.set_defaults(run=run)

    args = parser.parse_args()
    try:
        return args.run(args)
    except helm.HelmError as e:
        print(f"helm {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
