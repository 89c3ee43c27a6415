"""``python benchmarks/sql.py``: latencies of the SQL sandbox and of execution-accuracy scoring.

Builds (or reuses, in the temp directory) a ~10 MB SQLite database of random rows and prints the
median latency of one exploration query through :meth:`SQLiteSandbox.execute` in thread and process
mode, the median time of one :func:`~agentrl.envs.sql.verify.score_sql` over the original plus 5
perturbed copies (and, separately, how long building the copies took), and the median episode reset
(load + copy) time (target: under 20 ms).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentrl.envs.sql.verify import perturbed_copies, score_sql
from agentrl.sandboxes.base import ExecutionRequest
from agentrl.sandboxes.sqlite import SQLiteSandbox

__all__ = ["build_database", "main"]

_QUERY = ("SELECT c.city, count(*) AS n, round(avg(o.amount), 2) AS avg_amount FROM orders o "
          "JOIN customer c ON o.customer_id = c.id WHERE o.status = 'shipped' GROUP BY c.city ORDER BY n DESC")
_GOLD = "SELECT c.name FROM customer c JOIN orders o ON o.customer_id = c.id ORDER BY o.amount DESC LIMIT 5"


def build_database(path: Path, target_mb: float = 10.0, seed: int = 0) -> Path:
    """Write a database of random customers, products and orders of about ``target_mb`` MB (reused if present).

    >>> import tempfile, os
    >>> p = build_database(Path(tempfile.mkdtemp()) / "tiny.sqlite", target_mb=0.2)
    >>> 0.1 < os.path.getsize(p) / 1e6 < 0.5
    True
    """
    if path.exists():
        return path
    rng = random.Random(seed)
    words = ["alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "tango", "zulu", "nova"]
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    con.executescript(
        """
        CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INTEGER, bio TEXT);
        CREATE TABLE product(id INTEGER PRIMARY KEY, title TEXT, price REAL, category TEXT);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id),
                            product_id INTEGER REFERENCES product(id), amount REAL, status TEXT, note TEXT);
        """
    )
    # ~106 bytes on disk per order row, customers and products included (measured).
    n_orders = int(target_mb * 1e6 / 106)
    n_customers = max(10, n_orders // 10)
    n_products = max(10, n_orders // 100)
    con.executemany("INSERT INTO customer VALUES (?, ?, ?, ?, ?)", [
        (i, f"{rng.choice(words)} {rng.choice(words)} {i}", f"city{rng.randrange(50)}", rng.randint(18, 90),
         " ".join(rng.choice(words) for _ in range(25))) for i in range(1, n_customers + 1)])
    con.executemany("INSERT INTO product VALUES (?, ?, ?, ?)", [
        (i, f"product {i}", round(rng.uniform(1, 500), 2), rng.choice(words)) for i in range(1, n_products + 1)])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", [
        (i, rng.randint(1, n_customers), rng.randint(1, n_products), round(rng.uniform(1, 1000), 2),
         rng.choice(["shipped", "pending", "returned"]), " ".join(rng.choice(words) for _ in range(10)))
        for i in range(1, n_orders + 1)])
    con.commit()
    con.close()
    os.replace(tmp, path)
    return path


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "agentrl-bench-sql")
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    db = build_database(args.dir / f"bench-{args.mb:g}mb.sqlite", args.mb)
    print(f"database: {db} ({os.path.getsize(db) / 1e6:.1f} MB)")

    for mode in ("thread", "process"):
        with SQLiteSandbox(mode=mode) as box:  # type: ignore[arg-type]
            box.load(db)
            result = box.execute(ExecutionRequest(_QUERY))
            assert result.ok, result.error
            ms = _median_ms(lambda b=box: b.execute(ExecutionRequest(_QUERY)), args.repeats)
            print(f"exploration query, {mode:7s} mode: median {ms:7.2f} ms")
            ms = _median_ms(lambda b=box: b.execute(ExecutionRequest("SELECT 1")), args.repeats)
            print(f"trivial query (sandbox overhead), {mode} mode: median {ms:6.3f} ms")
            reset_ms = _median_ms(box.reset, args.repeats)
            print(f"episode reset (copy + reconnect), {mode} mode: median {reset_ms:6.2f} ms")
            load_ms = _median_ms(lambda b=box: b.load(db), args.repeats)
            print(f"episode load (load(db_path) = copy + connect), {mode} mode: median {load_ms:6.2f} ms")

    start = time.perf_counter()
    copies = perturbed_copies(db, 5, seed=0, out_dir=args.dir / f"suite-{time.time_ns()}")
    print(f"5 perturbed copies built in {time.perf_counter() - start:.2f} s (cached afterwards)")
    start = time.perf_counter()
    perturbed_copies(db, 5, seed=0, out_dir=copies[0].parent)
    print(f"5 perturbed copies, cache hit: {(time.perf_counter() - start) * 1000:.1f} ms (sha256 of the source)")
    suite = [db, *copies]
    pred = "SELECT c.name FROM orders o JOIN customer c ON c.id = o.customer_id ORDER BY o.amount DESC LIMIT 5"
    score = score_sql(pred, _GOLD, suite, order_matters=True, mode="generated")
    ms = _median_ms(lambda: score_sql(pred, _GOLD, suite, order_matters=True, mode="generated"),
                    max(3, args.repeats // 4))
    print(f"score_sql over original + 5 copies: median {ms:7.2f} ms (value={score.value})")
    for p in copies:
        p.unlink(missing_ok=True)
    copies[0].parent.rmdir()


if __name__ == "__main__":
    main()
