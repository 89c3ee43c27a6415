"""``agentrl osworld coverage|fetch-assets``: OSWorld's task files, from the ``agentrl`` command.

The ``agentrl`` command (:mod:`agentrl.cli`, a layer above this one) calls :func:`add_parser` with its
subparsers; each subcommand sets ``run=`` to its function here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run_coverage", "run_fetch_assets"]



def add_parser(commands: Any) -> None:
    """Add ``osworld coverage`` and ``osworld fetch-assets`` to the ``agentrl`` command's subparsers."""
    osworld = commands.add_parser("osworld", help="OSWorld task files: `agentrl osworld coverage PATH`, "
                                  "`agentrl osworld fetch-assets PATH`")
    osworld_commands = osworld.add_subparsers(dest="osworld_command", required=True, metavar="COMMAND")
    cover = osworld_commands.add_parser(
        "coverage",
        help="which tasks of OSWorld task files this desktop can run, and why not the others",
        description="Reads OSWorld task files as AgentRL/OSWorld-v0 does (file by file) and prints, per task, whether "
        "it can run here and what stops it (a file that cannot be parsed, a setup step, getter or metric not "
        "served, an app not installed), then totals per domain and overall and the top blockers.",
    )
    _add_task_files(cover)
    cover.add_argument("--apps", metavar="LIST", help="the apps the desktop has, comma-separated (xterm,chromium,"
                       "localc...), or 'all' (default: those on PATH here)")
    cover.add_argument("--json", action="store_true", help="machine-readable output")
    cover.add_argument("--summary", action="store_true", help="only the totals and the top blockers")
    cover.add_argument("--assets-dir", metavar="DIR", help="the asset cache to check the tasks' files in "
                       "(default $AGENTRL_CACHE/osworld/assets, else ~/.cache/agentrl/osworld/assets)")
    cover.set_defaults(run=run_coverage)
    fetch = osworld_commands.add_parser(
        "fetch-assets",
        help="download once the files OSWorld tasks fetch (download steps, cloud_file getters) into the asset cache",
        description="Collects every URL of the tasks' download setup steps (config and postconfig) and cloud_file "
        "getters (result and expected), downloads those not cached yet (http/https only, a size cap, retries) into "
        "the asset cache, and reports fetched / already cached / failed. Episodes read the files from the cache "
        "and never download. Exit status 1 when a file failed.",
    )
    _add_task_files(fetch)
    fetch.add_argument("--assets-dir", metavar="DIR", help="the asset cache (default $AGENTRL_CACHE/osworld/assets, "
                       "else ~/.cache/agentrl/osworld/assets)")
    fetch.add_argument("--max-mb", type=float, default=512.0, help="the largest file to keep, in MiB (default 512)")
    fetch.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    fetch.add_argument("--retries", type=int, default=3, help="tries per file (default 3, as OSWorld)")
    fetch.add_argument("--json", action="store_true", help="machine-readable output")
    fetch.set_defaults(run=run_fetch_assets)


def _add_task_files(parser: Any) -> None:
    """The task files both subcommands read: ``PATH`` and ``--split``."""
    parser.add_argument("path", help="a folder of task files, a task list (evaluation_examples/test_all.json), the "
                        "evaluation_examples folder (its test_all list), or one task file")
    parser.add_argument("--split", metavar="NAME", help="with an evaluation_examples folder: the task list NAME.json")


def run_coverage(args: argparse.Namespace) -> int:
    """``agentrl osworld coverage PATH``: print which tasks can run here and what stops the others."""
    import json

    from agentrl.envs.osworld.runtime.apps import APP_PACKAGES, NOT_IN_DEBIAN, installed_apps
    from agentrl.envs.osworld.tasks.assets import AssetStore
    from agentrl.envs.osworld.tasks.coverage import coverage, format_coverage

    if args.apps is None:
        installed: list[str] | None = installed_apps()
    elif args.apps == "all":
        installed = [*APP_PACKAGES, *NOT_IN_DEBIAN]
    else:
        installed = [app.strip() for app in args.apps.split(",") if app.strip()]
    report = coverage(args.path, split=args.split, installed=installed, assets=AssetStore(args.assets_dir))
    if args.json:
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(format_coverage(report, tasks=not args.summary))
    return 0


def run_fetch_assets(args: argparse.Namespace) -> int:
    """``agentrl osworld fetch-assets PATH``: fill the asset cache; exit status 1 when a file failed."""
    import json

    from agentrl.envs.osworld.tasks.assets import AssetStore, asset_refs, fetch_assets
    from agentrl.envs.osworld.tasks.pool import read_tasks

    if args.max_mb <= 0 or args.retries < 1 or args.timeout <= 0:
        print("error: --max-mb and --timeout must be positive and --retries at least 1", file=sys.stderr)
        return 2
    pool = read_tasks(args.path, split=args.split)
    urls = [ref.url for task in pool.tasks for ref in asset_refs(task)]
    store = AssetStore(args.assets_dir)
    distinct = len(dict.fromkeys(urls))
    print(f"{len(pool.tasks)} tasks of {args.path} fetch {distinct} distinct files; asset cache: {store.root}",
          file=sys.stderr)
    report = fetch_assets(urls, store, max_bytes=int(args.max_mb * 1024**2), timeout_s=args.timeout,
                          retries=args.retries, progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps({"assets_dir": str(store.root), "fetched": report.fetched, "cached": report.cached,
                          "failed": report.failed, "bytes_fetched": report.bytes_fetched}, indent=1))
    else:
        print(report.summary())
        for url, reason in report.failed.items():
            print(f"  failed {url}: {reason}")
    return 1 if report.failed else 0
