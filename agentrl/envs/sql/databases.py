"""Deterministic, realistic SQLite databases for the text-to-SQL env.

Five relational schemas (:data:`SCHEMAS`) are generated from a seed with small built-in word
lists: a shop, a school, a hospital, an airline and a library, each with 5-7 tables linked by
``PRIMARY KEY`` / ``FOREIGN KEY`` constraints and a few thousand rows of plausible values (names,
ISO dates, prices with two decimals, categories, some NULLs). The same ``(schema, seed)`` always
gives a byte-identical file, so :func:`database_path` can build once into a cache and reuse it.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import sqlite3
import tempfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentrl.core.choices import check_choice

__all__ = ["GENERATOR_VERSION", "SCHEMAS", "build_database", "check_schema", "database_path", "schema_text"]

SCHEMAS: tuple[str, ...] = ("shop", "school", "hospital", "airline", "library")
GENERATOR_VERSION = "v1"  # bump whenever a generator changes what it writes

_FIRST = (
    "Alice",
    "Bruno",
    "Chen",
    "Diana",
    "Emeka",
    "Fatima",
    "George",
    "Hana",
    "Ivan",
    "Julia",
    "Kenji",
    "Laura",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Samuel",
    "Tara",
    "Umar",
    "Vera",
    "Wei",
    "Ximena",
    "Yusuf",
    "Zoe",
    "Liam",
    "Mia",
    "Noah",
    "Olga",
)
_LAST = (
    "Smith",
    "Garcia",
    "Kim",
    "Müller",
    "Okafor",
    "Rossi",
    "Novak",
    "Tanaka",
    "Silva",
    "Dubois",
    "Khan",
    "Larsen",
    "Cohen",
    "Ivanova",
    "Nguyen",
    "Patel",
    "Jensen",
    "Moreau",
    "Costa",
    "Brown",
    "Weber",
    "Santos",
    "Hughes",
    "Popescu",
    "Fischer",
    "Lopez",
    "Sato",
    "Berg",
    "Adams",
    "Haddad",
)
_CITIES = ("Lisbon", "Oslo", "Austin", "Lyon", "Osaka", "Porto", "Denver", "Leeds", "Turin", "Perth", "Quebec", "Graz")
_EPOCH = _dt.date(2019, 1, 1)


def check_schema(schema: str) -> str:
    """Return ``schema`` if it is one of :data:`SCHEMAS`, else raise ``ValueError`` with a suggestion."""
    return check_choice("schema", schema, SCHEMAS)


# --------------------------------------------------------------------------------------------
# helpers


def _people(r: random.Random, n: int) -> list[str]:
    """``n`` distinct full names (at most 900)."""
    pool = [f"{f} {last}" for f in _FIRST for last in _LAST]
    return r.sample(pool, n)


def _date(r: random.Random, lo_days: int = 0, hi_days: int = 5 * 365) -> str:
    return (_EPOCH + _dt.timedelta(days=r.randint(lo_days, hi_days))).isoformat()


def _money(r: random.Random, lo: float, hi: float) -> float:
    return round(r.uniform(lo, hi), 2)


def _maybe(r: random.Random, value: Any, p_null: float = 0.1) -> Any:
    return None if r.random() < p_null else value


def _fill(con: sqlite3.Connection, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
    if rows:
        if not con.in_transaction:
            con.execute("BEGIN")
        marks = ", ".join("?" * len(rows[0]))
        con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)


# --------------------------------------------------------------------------------------------
# generators: each creates its tables and inserts rows in a fixed order


def _shop(con: sqlite3.Connection, r: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE categories (category_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT);
        CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            category_id INTEGER NOT NULL REFERENCES categories(category_id), brand TEXT NOT NULL,
            price REAL NOT NULL, stock INTEGER NOT NULL, rating REAL);
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL,
            email TEXT, signup_date TEXT NOT NULL);
        CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL
            REFERENCES customers(customer_id), order_date TEXT NOT NULL, status TEXT NOT NULL);
        CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(order_id),
            product_id INTEGER NOT NULL REFERENCES products(product_id), quantity INTEGER NOT NULL,
            unit_price REAL NOT NULL, PRIMARY KEY (order_id, product_id));
        CREATE TABLE reviews (review_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL
            REFERENCES customers(customer_id), product_id INTEGER NOT NULL REFERENCES products(product_id),
            stars INTEGER NOT NULL, review_date TEXT NOT NULL);
        """
    )
    cats = ("Electronics", "Books", "Garden", "Toys", "Kitchen", "Sports", "Beauty", "Office")
    _fill(con, "categories", [(i + 1, c, _maybe(r, f"All things {c.lower()}", 0.3)) for i, c in enumerate(cats)])
    brands = ("Acme", "Nordic", "Zenith", "Orbit", "Vega", "Kestrel", "Lumen", "Pioneer")
    nouns = ("Lamp", "Kettle", "Drone", "Novel", "Shovel", "Puzzle", "Racket", "Serum", "Stapler", "Speaker")
    adjs = ("Classic", "Smart", "Mini", "Pro", "Eco", "Ultra", "Compact", "Deluxe")
    n_products = r.randint(150, 200)
    names = r.sample([f"{a} {n} {k}" for a in adjs for n in nouns for k in range(1, 5)], n_products)
    products = []
    for i, name in enumerate(names):
        products.append(
            (
                i + 1,
                name,
                r.randint(1, len(cats)),
                r.choice(brands),
                _money(r, 3, 900),
                r.randint(0, 500),
                _maybe(r, round(r.uniform(1, 5), 1), 0.15),
            )
        )
    _fill(con, "products", products)
    n_cust = r.randint(250, 320)
    _fill(
        con,
        "customers",
        [
            (i + 1, name, r.choice(_CITIES), _maybe(r, name.lower().replace(" ", ".") + "@mail.example", 0.2), _date(r))
            for i, name in enumerate(_people(r, n_cust))
        ],
    )
    orders, items = [], []
    for o in range(1, r.randint(700, 800)):
        orders.append(
            (o, r.randint(1, n_cust), _date(r, 30), r.choice(("shipped", "delivered", "pending", "returned")))
        )
        for pid in sorted(r.sample(range(1, n_products - 9), r.randint(1, 4))):  # the last 10 never sell
            items.append((o, pid, r.randint(1, 5), products[pid - 1][4]))
    _fill(con, "orders", orders)
    _fill(con, "order_items", items)
    _fill(
        con,
        "reviews",
        [
            (i + 1, r.randint(1, n_cust), r.randint(1, n_products - 15), r.randint(1, 5), _date(r, 60))
            for i in range(r.randint(600, 700))
        ],
    )


def _school(con: sqlite3.Connection, r: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE departments (department_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            building TEXT NOT NULL, budget REAL NOT NULL);
        CREATE TABLE teachers (teacher_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
            department_id INTEGER NOT NULL REFERENCES departments(department_id), hire_date TEXT NOT NULL,
            salary REAL NOT NULL);
        CREATE TABLE courses (course_id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE,
            department_id INTEGER NOT NULL REFERENCES departments(department_id),
            teacher_id INTEGER REFERENCES teachers(teacher_id), level TEXT NOT NULL, credits INTEGER NOT NULL,
            capacity INTEGER NOT NULL);
        CREATE TABLE students (student_id INTEGER PRIMARY KEY, name TEXT NOT NULL, hometown TEXT NOT NULL,
            enrollment_year INTEGER NOT NULL, gpa REAL);
        CREATE TABLE enrollments (student_id INTEGER NOT NULL REFERENCES students(student_id),
            course_id INTEGER NOT NULL REFERENCES courses(course_id), semester TEXT NOT NULL, score REAL,
            PRIMARY KEY (student_id, course_id));
        """
    )
    depts = ("Mathematics", "Physics", "History", "Biology", "Economics", "Literature", "Chemistry")
    _fill(con, "departments", [(i + 1, d, f"Hall {chr(65 + i)}", _money(r, 2e5, 9e5)) for i, d in enumerate(depts)])
    people = _people(r, 600)
    n_teach = 60
    _fill(
        con,
        "teachers",
        [
            (i + 1, people[i], r.randint(1, len(depts)), _date(r, -4000, 0), _money(r, 40000, 120000))
            for i in range(n_teach)
        ],
    )
    topics = (
        "Algebra",
        "Optics",
        "Rome",
        "Genetics",
        "Markets",
        "Poetry",
        "Polymers",
        "Statistics",
        "Ecology",
        "Trade",
        "Drama",
        "Thermodynamics",
        "Empires",
        "Cells",
        "Finance",
        "Novels",
    )
    levels = ("Introductory", "Intermediate", "Advanced")
    titles = [f"{lv} {t}" for t in topics for lv in levels] + [f"Seminar in {t}" for t in topics]
    courses = []
    for i, title in enumerate(titles):
        courses.append(
            (
                i + 1,
                title,
                r.randint(1, len(depts)),
                _maybe(r, r.randint(1, n_teach), 0.1),
                title.split()[0] if title.split()[0] in levels else "Seminar",
                r.choice((2, 3, 4, 5, 6)),
                r.choice((20, 25, 30, 40, 60, 80)),
            )
        )
    _fill(con, "courses", courses)
    students = people[n_teach:]
    _fill(
        con,
        "students",
        [
            (i + 1, s, r.choice(_CITIES), r.randint(2018, 2024), _maybe(r, round(r.uniform(1.5, 4.0), 2), 0.1))
            for i, s in enumerate(students)
        ],
    )
    rows = []
    for sid in range(1, len(students) + 1):
        for cid in sorted(r.sample(range(1, len(courses) - 4), r.randint(1, 5))):  # the last 5 have nobody
            rows.append(
                (sid, cid, r.choice(("2023-fall", "2024-spring", "2024-fall")), _maybe(r, r.randint(35, 100), 0.08))
            )
    _fill(con, "enrollments", rows)


def _hospital(con: sqlite3.Connection, r: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE departments (department_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, floor INTEGER NOT NULL);
        CREATE TABLE doctors (doctor_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            department_id INTEGER NOT NULL REFERENCES departments(department_id), specialty TEXT NOT NULL,
            salary REAL NOT NULL, years_experience INTEGER NOT NULL);
        CREATE TABLE patients (patient_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, birth_date TEXT NOT NULL,
            city TEXT NOT NULL, insurance TEXT);
        CREATE TABLE appointments (appointment_id INTEGER PRIMARY KEY,
            patient_id INTEGER NOT NULL REFERENCES patients(patient_id),
            doctor_id INTEGER NOT NULL REFERENCES doctors(doctor_id), appointment_date TEXT NOT NULL,
            fee REAL NOT NULL, status TEXT NOT NULL);
        CREATE TABLE medications (medication_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            unit_price REAL NOT NULL);
        CREATE TABLE prescriptions (appointment_id INTEGER NOT NULL REFERENCES appointments(appointment_id),
            medication_id INTEGER NOT NULL REFERENCES medications(medication_id), dosage_mg INTEGER NOT NULL,
            PRIMARY KEY (appointment_id, medication_id));
        """
    )
    depts = ("Cardiology", "Neurology", "Pediatrics", "Oncology", "Orthopedics", "Dermatology", "Radiology")
    _fill(con, "departments", [(i + 1, d, r.randint(1, 6)) for i, d in enumerate(depts)])
    people = _people(r, 700)
    specs = ("Surgeon", "Consultant", "Resident", "Clinician")
    n_doc = 70
    _fill(
        con,
        "doctors",
        [
            (
                i + 1,
                "Dr. " + people[i],
                r.randint(1, len(depts)),
                r.choice(specs),
                _money(r, 80000, 300000),
                r.randint(1, 35),
            )
            for i in range(n_doc)
        ],
    )
    pats = people[n_doc:]
    _fill(
        con,
        "patients",
        [
            (
                i + 1,
                p,
                _date(r, -30000, -500),
                r.choice(_CITIES),
                _maybe(r, r.choice(("Basic", "Plus", "Premium")), 0.2),
            )
            for i, p in enumerate(pats)
        ],
    )
    meds = (
        "Aspirin",
        "Ibuprofen",
        "Amoxicillin",
        "Metformin",
        "Lisinopril",
        "Atorvastatin",
        "Omeprazole",
        "Cetirizine",
        "Insulin",
        "Warfarin",
        "Prednisone",
        "Albuterol",
    )
    _fill(con, "medications", [(i + 1, m, _money(r, 1, 80)) for i, m in enumerate(meds)])
    appts, rx = [], []
    for a in range(1, r.randint(1500, 1700)):
        appts.append(
            (
                a,
                r.randint(1, len(pats)),
                r.randint(1, n_doc - 5),
                _date(r, 0),
                _money(r, 40, 400),
                r.choice(("completed", "cancelled", "no-show", "completed")),
            )
        )
        for m in sorted(r.sample(range(1, len(meds) + 1), r.choice((0, 0, 1, 2)))):
            rx.append((a, m, r.choice((5, 10, 20, 50, 100, 250, 500))))
    _fill(con, "appointments", appts)
    _fill(con, "prescriptions", rx)


def _airline(con: sqlite3.Connection, r: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE airlines (airline_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, country TEXT NOT NULL);
        CREATE TABLE airports (code TEXT PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
        CREATE TABLE aircraft (aircraft_id INTEGER PRIMARY KEY, model TEXT NOT NULL, capacity INTEGER NOT NULL);
        CREATE TABLE flights (flight_id INTEGER PRIMARY KEY, flight_no TEXT NOT NULL UNIQUE,
            airline_id INTEGER NOT NULL REFERENCES airlines(airline_id),
            origin TEXT NOT NULL REFERENCES airports(code), destination TEXT NOT NULL REFERENCES airports(code),
            aircraft_id INTEGER REFERENCES aircraft(aircraft_id), status TEXT NOT NULL,
            distance_km INTEGER NOT NULL, duration_min INTEGER NOT NULL);
        CREATE TABLE passengers (passenger_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            nationality TEXT NOT NULL, birth_date TEXT);
        CREATE TABLE bookings (booking_id INTEGER PRIMARY KEY,
            passenger_id INTEGER NOT NULL REFERENCES passengers(passenger_id),
            flight_id INTEGER NOT NULL REFERENCES flights(flight_id), seat_class TEXT NOT NULL,
            price REAL NOT NULL, booking_date TEXT NOT NULL);
        """
    )
    airlines = (
        ("SkyWays", "Norway"),
        ("AeroSur", "Chile"),
        ("BlueJet", "Canada"),
        ("Sakura Air", "Japan"),
        ("Atlas Air", "Morocco"),
        ("Danube Air", "Austria"),
    )
    _fill(con, "airlines", [(i + 1, a, c) for i, (a, c) in enumerate(airlines)])
    codes = [
        ("LIS", "Lisbon"),
        ("OSL", "Oslo"),
        ("AUS", "Austin"),
        ("LYS", "Lyon"),
        ("KIX", "Osaka"),
        ("OPO", "Porto"),
        ("DEN", "Denver"),
        ("LBA", "Leeds"),
        ("TRN", "Turin"),
        ("PER", "Perth"),
        ("YQB", "Quebec"),
        ("GRZ", "Graz"),
    ]
    _fill(con, "airports", [(c, f"{city} International", city) for c, city in codes])
    models = (("A320", 180), ("A321", 220), ("B737", 189), ("B787", 296), ("E190", 114), ("ATR72", 70))
    _fill(con, "aircraft", [(i + 1, m, cap) for i, (m, cap) in enumerate(models * 3)])
    flights = []
    for i in range(r.randint(180, 220)):
        o, d = r.sample(range(len(codes)), 2)
        dist = r.randint(300, 9000)
        flights.append(
            (
                i + 1,
                f"{'SABSDA'[i % 6]}{'KRJAAN'[i % 6]}{100 + i * 7}",
                r.randint(1, len(airlines)),
                codes[o][0],
                codes[d][0],
                _maybe(r, r.randint(1, 18), 0.05),
                r.choice(("on time", "delayed", "cancelled", "on time")),
                dist,
                dist // 12 + r.randint(20, 60),
            )
        )
    _fill(con, "flights", flights)
    nations = ("Portugal", "Norway", "USA", "France", "Japan", "Italy", "Australia", "Canada")
    pax = _people(r, 500)
    _fill(
        con,
        "passengers",
        [(i + 1, p, r.choice(nations), _maybe(r, _date(r, -25000, -6000), 0.15)) for i, p in enumerate(pax)],
    )
    classes = (("economy", 1.0), ("economy", 1.0), ("premium", 1.8), ("business", 3.5))
    bookings = []
    for b in range(1, r.randint(1800, 2000)):
        fid = r.randint(1, len(flights) - 8)
        cls, mult = r.choice(classes)
        bookings.append(
            (
                b,
                r.randint(1, len(pax)),
                fid,
                cls,
                round(flights[fid - 1][7] * 0.08 * mult + r.uniform(20, 90), 2),
                _date(r),
            )
        )
    _fill(con, "bookings", bookings)


def _library(con: sqlite3.Connection, r: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE authors (author_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, country TEXT,
            birth_year INTEGER);
        CREATE TABLE books (book_id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE,
            author_id INTEGER NOT NULL REFERENCES authors(author_id), genre TEXT NOT NULL,
            publication_year INTEGER NOT NULL, pages INTEGER NOT NULL, price REAL NOT NULL);
        CREATE TABLE members (member_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, city TEXT NOT NULL,
            join_date TEXT NOT NULL, email TEXT);
        CREATE TABLE loans (loan_id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES books(book_id),
            member_id INTEGER NOT NULL REFERENCES members(member_id), loan_date TEXT NOT NULL, return_date TEXT,
            late_fee REAL NOT NULL);
        """
    )
    people = _people(r, 450)
    countries = ("Ireland", "Kenya", "Chile", "Japan", "Poland", "India", "Canada", "Egypt")
    n_auth = 50
    _fill(
        con,
        "authors",
        [
            (i + 1, people[i], _maybe(r, r.choice(countries), 0.1), _maybe(r, r.randint(1900, 1995), 0.1))
            for i in range(n_auth)
        ],
    )
    first = ("The Silent", "A Distant", "The Last", "Broken", "The Hidden", "Golden", "The Lost", "Winter", "The Red")
    second = ("River", "Garden", "Empire", "Letter", "Harbor", "Mountain", "Promise", "Archive", "Orchard", "Voyage")
    genres = ("Fiction", "Mystery", "Science", "History", "Poetry", "Fantasy", "Biography")
    titles = r.sample([f"{a} {b}" for a in first for b in second], 80) + [
        f"Notes on {g} {k}" for g in genres for k in range(1, 16)
    ]
    books = [
        (i + 1, t, r.randint(1, n_auth), r.choice(genres), r.randint(1950, 2024), r.randint(90, 900), _money(r, 5, 60))
        for i, t in enumerate(titles)
    ]
    _fill(con, "books", books)
    mems = people[n_auth:]
    _fill(
        con,
        "members",
        [
            (i + 1, m, r.choice(_CITIES), _date(r, -1000, 900), _maybe(r, f"member{i + 1}@lib.example", 0.25))
            for i, m in enumerate(mems)
        ],
    )
    loans = []
    for i in range(r.randint(1400, 1600)):
        start = _EPOCH + _dt.timedelta(days=r.randint(0, 1800))
        back = _maybe(r, (start + _dt.timedelta(days=r.randint(3, 60))).isoformat(), 0.1)
        fee = 0.0 if back is None else round(max(0, r.randint(3, 60) - 28) * 0.25, 2)
        loans.append((i + 1, r.randint(1, len(books) - 10), r.randint(1, len(mems)), start.isoformat(), back, fee))
    _fill(con, "loans", loans)


_GENERATORS: dict[str, Callable[[sqlite3.Connection, random.Random], None]] = {
    "shop": _shop,
    "school": _school,
    "hospital": _hospital,
    "airline": _airline,
    "library": _library,
}

# --------------------------------------------------------------------------------------------
# public API


def build_database(schema: str, seed: int, path: str | os.PathLike[str]) -> Path:
    """Generate the ``schema`` database for ``seed`` and write it to ``path`` (atomically).

    Args:
        schema: one of :data:`SCHEMAS`.
        seed: any non-negative integer; the same ``(schema, seed)`` gives a byte-identical file.
        path: where to write the ``.sqlite`` file (its folder is created if needed).

    Returns:
        The path written.

    Raises:
        ValueError: an unknown schema (with a suggestion) or a negative seed.

    >>> import tempfile, sqlite3
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = build_database("library", 0, f"{d}/lib.sqlite")
    ...     sqlite3.connect(p).execute("SELECT COUNT(*) > 100 FROM books").fetchone()
    (1,)
    """
    check_schema(schema)
    if int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(zlib.crc32(schema.encode()) * 1_000_003 + int(seed))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
            _GENERATORS[schema](con, rng)
            if con.in_transaction:
                con.execute("COMMIT")
            con.execute("VACUUM")
        finally:
            con.close()
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("AGENTRL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "agentrl"


def database_path(schema: str, seed: int, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the cached database for ``(schema, seed)``, building it on first use.

    The file lives at ``<cache>/sql/<GENERATOR_VERSION>/<schema>-<seed>.sqlite`` where ``<cache>`` is
    ``cache_dir``, else ``$AGENTRL_CACHE``, else ``~/.cache/agentrl``. Concurrent builders are safe:
    each writes a private temp file and renames it into place.

    Raises:
        ValueError: an unknown schema or a negative seed.
    """
    check_schema(schema)
    path = _cache_root(cache_dir) / "sql" / GENERATOR_VERSION / f"{schema}-{int(seed)}.sqlite"
    if not path.is_file():
        build_database(schema, seed, path)
    return path


def schema_text(
    db_path: str | os.PathLike[str],
    sample_rows: int = 3,
    budget_chars: int = 6000,
    tables: Sequence[str] | None = None,
) -> str:
    """Describe a database for a prompt: its ``CREATE`` statements plus a few sample rows per table.

    Args:
        db_path: an SQLite file.
        sample_rows: rows shown per table (0 for none).
        budget_chars: the text is cut to this many characters, ending with a visible marker.
        tables: only these tables (default: all of them).

    Raises:
        FileNotFoundError: ``db_path`` does not exist.
    """
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"database not found: {path.resolve()}")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        parts = []
        rows_of_tables = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
        for name, sql in rows_of_tables:
            if tables is not None and name not in tables:
                continue
            parts.append(sql.strip() + ";")
            if sample_rows > 0:
                cur = con.execute(f'SELECT * FROM "{name}" LIMIT {int(sample_rows)}')
                cols = [d[0] for d in cur.description]
                rows = cur.fetchall()
                if rows:
                    parts.append(f"/* {len(rows)} sample rows from {name}:\n" + " | ".join(cols))
                    parts.extend(" | ".join("NULL" if v is None else str(v) for v in row) for row in rows)
                    parts.append("*/")
    finally:
        con.close()
    text = "\n".join(parts)
    if len(text) > budget_chars:
        marker = f"\n... [schema truncated at {budget_chars} characters]"
        text = text[: max(0, budget_chars - len(marker))] + marker
    return text
