r"""Procedurally generated math problems that call for code (tool-integrated reasoning).

Every problem is exact (big integers or reduced fractions, never floats) and sized so that doing it
by hand is tedious or error-prone while a few lines of Python settle it, as in ToRL / SimpleTIR.
Each family is a small function ``(rng, difficulty) -> (prompt, answer, oracle_code)``; the oracle
code uses only the standard library and prints exactly the gold answer string.

A problem is fully determined by ``(family, difficulty, seed)``, which its id spells out:
``"tirmath/<family>/d<difficulty>/<seed>"``, so :meth:`ProceduralMathSource.get` regenerates any
task from its id alone.

Difficulty 0 is the *easy tier*: one-step problems on single-digit numbers (``3 + 5``, ``x + 2 = 7``,
``1 + 2 + 3``) answered directly in ``\boxed{}``, no code needed, after an example of that format.
It exists so that a small model (the embedded SmolLM2-135M) scores above zero; the verifier is the
same as for every tier.

Answers are canonical strings: an integer such as ``"-1234"``, or a reduced fraction in LaTeX such
as ``"\frac{3}{7}"`` / ``"-\frac{3}{7}"``.
"""

from __future__ import annotations

import functools
import math
import operator
import re
import zlib
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import compress
from typing import TypeVar

import numpy as np

from agentrl.core.choices import check_choice, check_level, level_range
from agentrl.core.errors import UnknownTask
from agentrl.core.task import Task

__all__ = [
    "DIFFICULTIES",
    "SPLITS",
    "TEST_PERCENT",
    "problem_split",
    "split_tasks",
    "EASY",
    "EASY_FORMAT",
    "FAMILIES",
    "ID_PREFIX",
    "ProceduralMathSource",
    "generate_problem",
    "parse_task_id",
]

ID_PREFIX = "tirmath"
DIFFICULTIES: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
EASY = 0  # the easy tier: single-digit, one-step problems
FINAL_SENTENCE = "Give the final answer as \\boxed{...}."
CODE_PREAMBLE = "I'll compute this."

_T = TypeVar("_T")
FamilyFn = Callable[[np.random.Generator, int], tuple[str, str, str]]

# --------------------------------------------------------------------------------------------
# helpers


def _ri(rng: np.random.Generator, lo: int, hi: int) -> int:
    """Draw a uniform Python int in ``[lo, hi]`` (both ends included; bounds must fit in int64)."""
    return int(rng.integers(lo, hi + 1))


def _pick(rng: np.random.Generator, options: Sequence[_T]) -> _T:
    """Pick uniformly from a sequence (keeps Python types, unlike ``rng.choice``)."""
    return options[int(rng.integers(len(options)))]


def _digits(rng: np.random.Generator, n: int) -> int:
    """Draw a uniform random integer with exactly ``n`` decimal digits (any size)."""
    first = str(int(rng.integers(1, 10)))
    rest = "".join(str(d) for d in rng.integers(0, 10, size=n - 1))
    return int(first + rest)


def _latex(x: int | Fraction) -> str:
    r"""Canonical answer string: ``"42"``, ``"-7"``, ``"\frac{3}{7}"`` or ``"-\frac{3}{7}"``."""
    x = Fraction(x)
    if x.denominator == 1:
        return str(x.numerator)
    sign = "-" if x < 0 else ""
    return f"{sign}\\frac{{{abs(x.numerator)}}}{{{x.denominator}}}"


# The same formatting, as source text for oracle programs (prints exactly what _latex returns).
_FMT_SRC = r"""def fmt(x):
    x = Fraction(x)
    if x.denominator == 1:
        return str(x.numerator)
    sign = "-" if x < 0 else ""
    return sign + "\\frac{%d}{%d}" % (abs(x.numerator), x.denominator)
"""


def _prompt(*sentences: str) -> str:
    """Join the statement sentences and end with the boxed-answer instruction."""
    return " ".join(s.strip() for s in sentences if s) + " " + FINAL_SENTENCE


def _code(*lines: str) -> str:
    """Join oracle program lines (each may itself hold several lines)."""
    return "\n".join(line.rstrip("\n") for line in lines)


# --------------------------------------------------------------------------------------------
# arithmetic: exact big-integer arithmetic


def _arithmetic(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    kind = _pick(rng, ("product", "sum", "power", "digit_sum_power", "digit_sum_factorial", "floor_div"))
    if kind == "product":
        n = 6 + 4 * d
        a, b = _digits(rng, n + _ri(rng, -2, 1)), _digits(rng, n + _ri(rng, -2, 1))
        return (
            _prompt(f"Compute the exact value of ${a} \\times {b}$."),
            str(a * b),
            _code(f"print({a} * {b})"),
        )
    if kind == "sum":
        count = 2 + (d + 1) // 2
        terms = [_digits(rng, _ri(rng, 10, 10 + 6 * d)) for _ in range(count)]
        signs = ["+"] + [_pick(rng, ("+", "-")) for _ in range(count - 1)]
        expr = str(terms[0]) + "".join(f" {s} {t}" for s, t in zip(signs[1:], terms[1:], strict=True))
        value = sum(t if s == "+" else -t for s, t in zip(signs, terms, strict=True))
        return (
            _prompt(f"Compute the exact value of ${expr}$."),
            str(value),
            _code(f"print({expr})"),
        )
    if kind == "power":
        base = _ri(rng, 3, 10 ** min(d + 1, 4) - 1)
        if base % 10 == 0:
            base += 1
        target = _ri(rng, 10 + 6 * d, 18 + 7 * d)  # digits of the answer, at most 53
        exponent = max(2, int(target / math.log10(base)))
        return (
            _prompt(f"Compute the exact value of ${base}^{{{exponent}}}$."),
            str(base**exponent),
            _code(f"print({base} ** {exponent})"),
        )
    if kind == "digit_sum_power":
        base = _ri(rng, 2, 99)
        if base % 10 == 0:
            base += 1
        exponent = _ri(rng, 40 * d, 120 * d)
        value = sum(map(int, str(base**exponent)))
        return (
            _prompt(f"What is the sum of the decimal digits of ${base}^{{{exponent}}}$?"),
            str(value),
            _code(f"print(sum(int(c) for c in str({base} ** {exponent})))"),
        )
    if kind == "digit_sum_factorial":
        n = _ri(rng, 20 * d, 60 * d)
        value = sum(map(int, str(math.factorial(n))))
        return (
            _prompt(f"What is the sum of the decimal digits of ${n}!$?"),
            str(value),
            _code("import math", f"print(sum(int(c) for c in str(math.factorial({n}))))"),
        )
    # floor_div: floor(base^exponent / m)
    base = _ri(rng, 2, 10 ** min(d, 3) + 7)
    if base % 10 == 0:
        base += 1
    target = _ri(rng, 25 + 4 * d, 32 + 5 * d)  # digits of base^exponent, at most 57
    exponent = max(2, int(target / math.log10(base)))
    m = _digits(rng, _ri(rng, 3 + d, 5 + 2 * d))
    return (
        _prompt(f"Compute $\\left\\lfloor \\dfrac{{{base}^{{{exponent}}}}}{{{m}}} \\right\\rfloor$."),
        str(base**exponent // m),
        _code(f"print({base} ** {exponent} // {m})"),
    )


# --------------------------------------------------------------------------------------------
# modular: powers, inverses, CRT, last digits


def _modular(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    kind = _pick(rng, ("powmod", "inverse", "crt", "last_digits"))
    if kind == "powmod":
        a = _digits(rng, _ri(rng, 2, 2 + 2 * d))
        b = _digits(rng, _ri(rng, 5 + 3 * d, 10 + 6 * d))
        m = _digits(rng, _ri(rng, 3, 3 + 2 * d))
        return (
            _prompt(f"Compute ${a}^{{{b}}} \\bmod {m}$, the remainder when ${a}^{{{b}}}$ is divided by ${m}$."),
            str(pow(a, b, m)),
            _code(f"print(pow({a}, {b}, {m}))"),
        )
    if kind == "inverse":
        m = _digits(rng, _ri(rng, 3 + d, 4 + 3 * d))
        while True:
            a = _ri(rng, 2, min(m - 1, 2**62))
            if math.gcd(a, m) == 1:
                break
        return (
            _prompt(
                f"Find the multiplicative inverse of ${a}$ modulo ${m}$, that is, the integer $x$ with "
                f"$0 \\le x < {m}$ and ${a}x \\equiv 1 \\pmod{{{m}}}$."
            ),
            str(pow(a, -1, m)),
            _code(f"print(pow({a}, -1, {m}))"),
        )
    if kind == "crt":
        count = min(1 + d, 5)
        moduli: list[int] = []
        while len(moduli) < count:
            m = _ri(rng, 3, 12 + 25 * d * d)
            if all(math.gcd(m, other) == 1 for other in moduli):
                moduli.append(m)
        residues = [_ri(rng, 0, m - 1) for m in moduli]
        x, big = 0, 1
        for r, m in zip(residues, moduli, strict=True):
            x += big * ((r - x) * pow(big, -1, m) % m)
            big *= m
        congruences = ", ".join(f"$x \\equiv {r} \\pmod{{{m}}}$" for r, m in zip(residues, moduli, strict=True))
        return (
            _prompt(f"Find the smallest non-negative integer $x$ such that {congruences}."),
            str(x),
            _code(
                f"residues = {residues}",
                f"moduli = {moduli}",
                "x, M = 0, 1",
                "for r, m in zip(residues, moduli):",
                "    x += M * ((r - x) * pow(M, -1, m) % m)",
                "    M *= m",
                "print(x)",
            ),
        )
    # last_digits
    k = _ri(rng, 3, 3 + d)
    a = _digits(rng, _ri(rng, 2, 3 + d))
    if a % 10 == 0:
        a += 7
    b = _digits(rng, _ri(rng, 8 + 2 * d, 10 + 6 * d))
    return (
        _prompt(
            f"What are the last ${k}$ digits of ${a}^{{{b}}}$? Give them as a single integer, "
            f"namely ${a}^{{{b}}} \\bmod 10^{{{k}}}$ (leading zeros dropped)."
        ),
        str(pow(a, b, 10**k)),
        _code(f"print(pow({a}, {b}, 10 ** {k}))"),
    )


# --------------------------------------------------------------------------------------------
# combinatorics: exact counts


def _partition_count(n: int, variant: str, parts: Sequence[int] = ()) -> int:
    ways = [1] + [0] * n
    if variant == "distinct":
        for k in range(1, n + 1):
            for i in range(n, k - 1, -1):
                ways[i] += ways[i - k]
        return ways[n]
    for k in parts if variant == "coins" else range(1, n + 1):
        for i in range(k, n + 1):
            ways[i] += ways[i - k]
    return ways[n]


def _combinatorics(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    kind = _pick(rng, ("binomial", "multiset", "partial_derangement", "derangement", "lattice", "partitions", "coins"))
    if kind == "binomial":
        n = _ri(rng, 20 * d, 30 * d)
        k = _ri(rng, 3, n // 2)
        statement = _pick(
            rng,
            (
                f"Compute the binomial coefficient $\\binom{{{n}}}{{{k}}}$.",
                f"In how many ways can a committee of ${k}$ people be chosen from ${n}$ people?",
                f"How many ${k}$-element subsets does a set with ${n}$ elements have?",
            ),
        )
        return _prompt(statement), str(math.comb(n, k)), _code("import math", f"print(math.comb({n}, {k}))")
    if kind == "multiset":
        letters = "ABCDEFGHKMNPRST"
        distinct = _ri(rng, 2 + d // 2, 3 + d)
        chosen = [letters[int(i)] for i in rng.choice(len(letters), size=distinct, replace=False)]
        word_letters = [c for c in chosen for _ in range(_ri(rng, 1, 1 + d))]
        word = "".join(word_letters[int(i)] for i in rng.permutation(len(word_letters)))
        counts = [word.count(c) for c in sorted(set(word))]
        value = math.factorial(len(word))
        for c in counts:
            value //= math.factorial(c)
        return (
            _prompt(f"How many distinct strings can be formed by rearranging all the letters of {word}?"),
            str(value),
            _code(
                "import math",
                "from collections import Counter",
                f'word = "{word}"',
                "total = math.factorial(len(word))",
                "for c in Counter(word).values():",
                "    total //= math.factorial(c)",
                "print(total)",
            ),
        )
    if kind == "partial_derangement":
        n = _ri(rng, 4 + 2 * d, 6 + 4 * d)
        s = _ri(rng, 2, n - 1)
        fixed = sorted(int(i) + 1 for i in rng.choice(n, size=s, replace=False))
        value = sum((-1) ** j * math.comb(s, j) * math.factorial(n - j) for j in range(s + 1))
        return (
            _prompt(
                f"How many permutations $\\sigma$ of $\\{{1, 2, \\ldots, {n}\\}}$ satisfy "
                f"$\\sigma(i) \\ne i$ for every $i \\in \\{{{', '.join(map(str, fixed))}\\}}$?"
            ),
            str(value),
            _code(
                "import math",
                f"n, s = {n}, {s}  # s = number of positions that must move",
                "print(sum((-1) ** j * math.comb(s, j) * math.factorial(n - j) for j in range(s + 1)))",
            ),
        )
    if kind == "derangement":
        n = _ri(rng, 5 * d + 1, 7 * d + 5)
        a, b = 1, 0  # D(0), D(1)
        for i in range(2, n + 1):
            a, b = b, (i - 1) * (a + b)
        return (
            _prompt(
                f"A secretary puts ${n}$ letters into ${n}$ addressed envelopes at random. In how many of "
                f"the ${n}!$ ways does no letter end up in its own envelope?"
            ),
            str(b),
            _code(
                f"n = {n}",
                "a, b = 1, 0  # D(0), D(1)",
                "for i in range(2, n + 1):",
                "    a, b = b, (i - 1) * (a + b)",
                "print(b)",
            ),
        )
    if kind == "lattice":
        w, h = _ri(rng, 3 + 2 * d, 5 + 3 * d), _ri(rng, 3 + 2 * d, 5 + 3 * d)
        interior = [(x, y) for x in range(w + 1) for y in range(h + 1) if (x, y) not in ((0, 0), (w, h))]
        while True:
            picks = rng.choice(len(interior), size=_ri(rng, 1, 1 + 2 * d), replace=False)
            blocked = sorted(interior[int(i)] for i in picks)
            ways = [[0] * (h + 1) for _ in range(w + 1)]
            for x in range(w + 1):
                for y in range(h + 1):
                    if (x, y) in blocked:
                        continue
                    if x == 0 and y == 0:
                        ways[x][y] = 1
                    else:
                        ways[x][y] = (ways[x - 1][y] if x else 0) + (ways[x][y - 1] if y else 0)
            if ways[w][h]:
                break
        points = ", ".join(f"$({x}, {y})$" for x, y in blocked)
        return (
            _prompt(
                f"A lattice path goes from $(0, 0)$ to $({w}, {h})$ using unit steps right $(+1, 0)$ or up "
                f"$(0, +1)$. How many such paths avoid all of the points {points}?"
            ),
            str(ways[w][h]),
            _code(
                f"W, H = {w}, {h}",
                f"blocked = {set(blocked)!r}",
                "ways = {}",
                "for x in range(W + 1):",
                "    for y in range(H + 1):",
                "        if (x, y) in blocked:",
                "            ways[x, y] = 0",
                "        elif x == 0 and y == 0:",
                "            ways[x, y] = 1",
                "        else:",
                "            ways[x, y] = ways.get((x - 1, y), 0) + ways.get((x, y - 1), 0)",
                "print(ways[W, H])",
            ),
        )
    if kind == "partitions":
        variant = _pick(rng, ("all", "distinct"))
        if variant == "all":
            n = _ri(rng, 20 * d, 60 * d)
            statement = (
                f"In how many ways can ${n}$ be written as a sum of positive integers, where the order of "
                f"the summands does not matter (that is, what is the partition number $p({n})$)?"
            )
            loop = ["for k in range(1, n + 1):", "    for i in range(k, n + 1):", "        ways[i] += ways[i - k]"]
        else:
            n = _ri(rng, 40 * d, 100 * d)
            statement = (
                f"In how many ways can ${n}$ be written as a sum of distinct positive integers, where the "
                f"order of the summands does not matter?"
            )
            loop = [
                "for k in range(1, n + 1):",
                "    for i in range(n, k - 1, -1):",
                "        ways[i] += ways[i - k]",
            ]
        return (
            _prompt(statement),
            str(_partition_count(n, variant)),
            _code(f"n = {n}", "ways = [1] + [0] * n", *loop, "print(ways[n])"),
        )
    # coins: unordered ways to pay an amount
    pool = (1, 2, 3, 5, 7, 10, 12, 15, 20, 25, 50, 75, 100, 200)
    count = _ri(rng, 3, 3 + d)
    coins = sorted({1} | {pool[int(i)] for i in rng.choice(len(pool), size=count, replace=False)})
    amount = _ri(rng, 50 * d * d, 100 * d * d + 100)
    return (
        _prompt(
            f"Coins come in denominations {', '.join(map(str, coins))} (unlimited supply of each). In how "
            f"many ways can one pay exactly ${amount}$ with them, if the order of the coins does not matter?"
        ),
        str(_partition_count(amount, "coins", coins)),
        _code(
            f"coins = {coins}",
            f"amount = {amount}",
            "ways = [1] + [0] * amount",
            "for c in coins:",
            "    for i in range(c, amount + 1):",
            "        ways[i] += ways[i - c]",
            "print(ways[amount])",
        ),
    )


# --------------------------------------------------------------------------------------------
# linear_system: integer coefficients, unique (possibly fractional) solution

_SOLVE_SRC = """def solve(A, b):
    n = len(A)
    M = [[Fraction(v) for v in row] + [Fraction(r)] for row, r in zip(A, b)]
    for i in range(n):
        p = next(r for r in range(i, n) if M[r][i] != 0)
        M[i], M[p] = M[p], M[i]
        for r in range(n):
            if r != i and M[r][i] != 0:
                f = M[r][i] / M[i][i]
                M[r] = [u - f * v for u, v in zip(M[r], M[i])]
    return [M[i][n] / M[i][i] for i in range(n)]
"""

_solve_ns: dict = {"Fraction": Fraction}
exec(_SOLVE_SRC, _solve_ns)  # the generator uses the very function the oracle prints
_solve: Callable[[list[list[int]], list[int]], list[Fraction]] = _solve_ns["solve"]

_VARIABLES = {2: "xy", 3: "xyz", 4: "wxyz", 5: "vwxyz"}


def _det(a: list[list[int]]) -> Fraction:
    m = [[Fraction(v) for v in row] for row in a]
    n, det = len(m), Fraction(1)
    for i in range(n):
        p = next((r for r in range(i, n) if m[r][i] != 0), None)
        if p is None:
            return Fraction(0)
        if p != i:
            m[i], m[p] = m[p], m[i]
            det = -det
        det *= m[i][i]
        for r in range(i + 1, n):
            f = m[r][i] / m[i][i]
            m[r] = [u - f * v for u, v in zip(m[r], m[i], strict=True)]
    return det


def _equation(coefficients: list[int], names: str, rhs: int) -> str:
    terms: list[str] = []
    for c, name in zip(coefficients, names, strict=True):
        if c == 0:
            continue
        magnitude = "" if abs(c) == 1 else str(abs(c))
        if not terms:
            terms.append(("-" if c < 0 else "") + magnitude + name)
        else:
            terms.append(("- " if c < 0 else "+ ") + magnitude + name)
    return " ".join(terms) + f" = {rhs}"


def _linear_system(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    n = {1: 2, 2: 3, 3: 4, 4: 5, 5: 5}[d]
    bound = {1: 5, 2: 6, 3: 7, 4: 8, 5: 12}[d]
    names = _VARIABLES[n]
    integral = rng.random() < 0.5
    ask_sum = rng.random() < 0.3
    target = _ri(rng, 0, n - 1)
    while True:
        a = [[_ri(rng, -bound, bound) for _ in range(n)] for _ in range(n)]
        if _det(a) == 0:
            continue
        if integral:
            solution = [_ri(rng, -3 * bound, 3 * bound) for _ in range(n)]
            b = [sum(c * s for c, s in zip(row, solution, strict=True)) for row in a]
        else:
            b = [_ri(rng, -10 * bound, 10 * bound) for _ in range(n)]
        x = _solve(a, b)
        value = sum(x) if ask_sum else x[target]
        answer = _latex(value)
        if len(answer) <= 40:
            break
    system = "\n".join(_equation(row, names, r) for row, r in zip(a, b, strict=True))
    question = f"What is ${' + '.join(names)}$?" if ask_sum else f"What is the value of ${names[target]}$?"
    return (
        _prompt(
            f"Consider the system of linear equations\n\n{system}\n\nwhich has a unique solution.",
            question,
            "Answer with the exact value (a reduced fraction if it is not an integer).",
        ),
        answer,
        _code(
            "from fractions import Fraction",
            "",
            _SOLVE_SRC,
            "",
            _FMT_SRC,
            f"A = {a}",
            f"b = {b}",
            "x = solve(A, b)",
            "print(fmt(sum(x)))" if ask_sum else f"print(fmt(x[{target}]))  # {names[target]}",
        ),
    )


# --------------------------------------------------------------------------------------------
# series: exact sums

_POWER_SUM_SRC = """def power_sum(n, p):
    # sum of k**p for k = 1..n: a polynomial in n of degree p + 1, interpolated at 0..p+1
    xs = range(p + 2)
    ys = [sum(k ** p for k in range(1, x + 1)) for x in xs]
    total = Fraction(0)
    for i in xs:
        term = Fraction(ys[i])
        for j in xs:
            if j != i:
                term *= Fraction(n - j, i - j)
        total += term
    return int(total)
"""

_power_ns: dict = {"Fraction": Fraction}
exec(_POWER_SUM_SRC, _power_ns)
_power_sum: Callable[[int, int], int] = _power_ns["power_sum"]

_SIEVE_LIMIT = 2_000_001


@functools.lru_cache(maxsize=1)
def _sieve() -> bytearray:
    flags = bytearray([1]) * _SIEVE_LIMIT
    flags[0] = flags[1] = 0
    for i in range(2, math.isqrt(_SIEVE_LIMIT - 1) + 1):
        if flags[i]:
            flags[i * i :: i] = bytes(len(range(i * i, _SIEVE_LIMIT, i)))
    return flags


def _series(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    kind = _pick(rng, ("power_sum", "geometric", "floor_sum", "primes", "harmonic"))
    if kind == "power_sum":
        p = _ri(rng, 2, 1 + d)
        hi_digits = max(2, min(2 + 2 * d, 52 // (p + 1)))
        b = _ri(rng, 10 ** (hi_digits - 1), 10**hi_digits)
        a = _ri(rng, 1, max(1, b // 3))
        value = _power_sum(b, p) - _power_sum(a - 1, p)
        return (
            _prompt(f"Compute $\\displaystyle\\sum_{{k={a}}}^{{{b}}} k^{{{p}}}$ exactly."),
            str(value),
            _code(
                "from fractions import Fraction",
                "",
                _POWER_SUM_SRC,
                f"print(power_sum({b}, {p}) - power_sum({a - 1}, {p}))",
            ),
        )
    if kind == "geometric":
        c = _pick(rng, (1, 1, 2, 3, 5, 7))
        if d >= 3 and rng.random() < 0.5:
            q = _ri(rng, 2, 3 + d)
            p = _ri(rng, 1, 2 * q)
            while math.gcd(p, q) != 1 or p == q:
                p = _ri(rng, 1, 2 * q)
            if rng.random() < 0.3:
                p = -p
            r = Fraction(p, q)
            n = max(3, int(22 / math.log10(max(abs(p), q))))
            n = _ri(rng, n // 2, n)
            ratio_tex = f"\\left({_latex(r)}\\right)"
            ratio_py = f"Fraction({p}, {q})"
        else:
            r = Fraction(_pick(rng, (-9, -7, -5, -3, -2, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13)))
            n = max(3, min(10 * d, int(50 / math.log10(abs(r.numerator)))))
            n = _ri(rng, n // 2, n)
            ratio_tex = f"({r})" if r < 0 else str(r)
            ratio_py = f"Fraction({r})"
        value = sum(c * r**k for k in range(n + 1))  # type: ignore[misc]  # typeshed's sum() overloads miss Fraction
        factor = "" if c == 1 else f"{c} \\cdot "
        return (
            _prompt(
                f"Compute $\\displaystyle\\sum_{{k=0}}^{{{n}}} {factor}{ratio_tex}^{{k}}$ exactly.",
                "Answer with a reduced fraction if the sum is not an integer.",
            ),
            _latex(value),
            _code(
                "from fractions import Fraction",
                "",
                _FMT_SRC,
                f"print(fmt(sum({c} * {ratio_py} ** k for k in range({n} + 1))))",
            ),
        )
    if kind == "floor_sum":
        n = _ri(rng, 10 ** (d + 3), 10 ** (d + 4))
        weighted = rng.random() < 0.5
        total, k = 0, 1
        while k <= n:
            q = n // k
            k2 = n // q
            total += q * ((k + k2) * (k2 - k + 1) // 2 if weighted else (k2 - k + 1))
            k = k2 + 1
        floor = "\\left\\lfloor \\frac{N}{k} \\right\\rfloor"
        summand = f"k {floor}" if weighted else floor
        block = "q * (k + k2) * (k2 - k + 1) // 2" if weighted else "q * (k2 - k + 1)"
        return (
            _prompt(f"Let $N = {n}$. Compute $\\displaystyle\\sum_{{k=1}}^{{N}} {summand}$."),
            str(total),
            _code(
                f"N = {n}",
                "total, k = 0, 1",
                "while k <= N:  # group the k that share the same quotient N // k",
                "    q = N // k",
                "    k2 = N // q",
                f"    total += {block}",
                "    k = k2 + 1",
                "print(total)",
            ),
        )
    if kind == "primes":
        n = _ri(rng, 2 * 10 ** (d + 1), 10 ** (d + 2)) if d < 5 else _ri(rng, 10**6, _SIEVE_LIMIT - 1)
        flags = _sieve()
        count_only = rng.random() < 0.3
        value = flags.count(1, 0, n) if count_only else sum(compress(range(n), flags[:n]))
        question = (
            f"How many prime numbers are less than ${n}$?"
            if count_only
            else f"What is the sum of all prime numbers less than ${n}$?"
        )
        return (
            _prompt(question),
            str(value),
            _code(
                f"N = {n}",
                "flags = bytearray([1]) * N",
                "flags[0] = flags[1] = 0",
                "for i in range(2, int(N ** 0.5) + 1):",
                "    if flags[i]:",
                "        flags[i * i :: i] = bytes(len(range(i * i, N, i)))",
                "print(sum(flags))" if count_only else "print(sum(i for i in range(N) if flags[i]))",
            ),
        )
    # harmonic: (alternating) harmonic numbers as reduced fractions
    n = _ri(rng, 5 * d + 3, 6 * d + 6)
    alternating = rng.random() < 0.4
    if alternating:
        value = sum(Fraction((-1) ** (k + 1), k) for k in range(1, n + 1))  # type: ignore[misc]  # typeshed's sum() overloads miss Fraction
        expr = f"\\sum_{{k=1}}^{{{n}}} \\frac{{(-1)^{{k+1}}}}{{k}}"
        term = "Fraction((-1) ** (k + 1), k)"
    else:
        value = sum(Fraction(1, k) for k in range(1, n + 1))  # type: ignore[misc]  # typeshed's sum() overloads miss Fraction
        expr = f"\\sum_{{k=1}}^{{{n}}} \\frac{{1}}{{k}}"
        term = "Fraction(1, k)"
    return (
        _prompt(f"Compute $\\displaystyle {expr}$ exactly, as a reduced fraction."),
        _latex(value),
        _code("from fractions import Fraction", "", _FMT_SRC, f"print(fmt(sum({term} for k in range(1, {n + 1}))))"),
    )


# --------------------------------------------------------------------------------------------
# the easy tier (difficulty 0): one step on single-digit numbers, answerable without code

#: The easy tier's answer format, with an example. Its answer, 100, is above every easy answer (at
#: most 81), so an agent that only copies the example never scores.
EASY_FORMAT = "Answer with the number in \\boxed{}, for example \\boxed{100} if the answer is 100."


def _easy_prompt(statement: str) -> str:
    """The answer format with an example (small models copy formats), then the statement."""
    return f"{EASY_FORMAT}\n\nQuestion: {statement}\nAnswer:"


def _easy_arithmetic(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    a, b = _ri(rng, 1, 9), _ri(rng, 1, 9)
    op = _pick(rng, ("+", "-", "*"))
    if op == "-" and b > a:
        a, b = b, a
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    shown = "\\times" if op == "*" else op
    return _easy_prompt(f"What is ${a} {shown} {b}$?"), str(value), _code(f"print({a} {op} {b})")


def _easy_modular(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    m = _ri(rng, 2, 9)
    a = _ri(rng, m + 1, 9 + m)
    return (
        _easy_prompt(f"What is the remainder when ${a}$ is divided by ${m}$?"),
        str(a % m),
        _code(f"print({a} % {m})"),
    )


def _easy_combinatorics(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    if rng.random() < 0.5:
        n = _ri(rng, 2, 3)
        return (
            _easy_prompt(f"In how many different orders can ${n}$ people stand in a line?"),
            str(math.factorial(n)),
            _code("import math", f"print(math.factorial({n}))"),
        )
    n = _ri(rng, 2, 5)
    return (
        _easy_prompt(f"In how many ways can you choose $1$ fruit from a bowl of ${n}$ different fruits?"),
        str(n),
        _code(f"print({n})"),
    )


def _easy_linear_system(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    x, b = _ri(rng, 1, 9), _ri(rng, 1, 9)
    if rng.random() < 0.5:
        return _easy_prompt(f"If $x + {b} = {x + b}$, what is $x$?"), str(x), _code(f"print({x + b} - {b})")
    x, b = max(x, b), min(x, b)  # keep the right-hand side non-negative
    return _easy_prompt(f"If $x - {b} = {x - b}$, what is $x$?"), str(x), _code(f"print({x - b} + {b})")


def _easy_series(rng: np.random.Generator, d: int) -> tuple[str, str, str]:
    n = _ri(rng, 2, 4)
    terms = " + ".join(str(k) for k in range(1, n + 1))
    return _easy_prompt(f"What is ${terms}$?"), str(n * (n + 1) // 2), _code(f"print(sum(range(1, {n + 1})))")


# --------------------------------------------------------------------------------------------
# public API

_FAMILY_FUNCTIONS: dict[str, FamilyFn] = {
    "arithmetic": _arithmetic,
    "modular": _modular,
    "combinatorics": _combinatorics,
    "linear_system": _linear_system,
    "series": _series,
}
FAMILIES: tuple[str, ...] = tuple(_FAMILY_FUNCTIONS)
_EASY_FUNCTIONS: dict[str, FamilyFn] = {
    "arithmetic": _easy_arithmetic,
    "modular": _easy_modular,
    "combinatorics": _easy_combinatorics,
    "linear_system": _easy_linear_system,
    "series": _easy_series,
}

_ID_PATTERN = re.compile(rf"^{ID_PREFIX}/(?P<family>[^/]+)/d(?P<difficulty>\d+)/(?P<seed>\d+)$")


def _check_family(family: object) -> str:
    return check_choice("family", family, FAMILIES)


def _check_difficulty(difficulty: object) -> int:
    return check_level(difficulty, DIFFICULTIES)


def _oracle_actions(code: str, answer: str) -> tuple[str, str]:
    return f"{CODE_PREAMBLE}\n```python\n{code}\n```", f"The answer is \\boxed{{{answer}}}."


def generate_problem(family: str, difficulty: int, seed: int) -> Task:
    r"""Generate one problem, deterministically in ``(family, difficulty, seed)``.

    Args:
        family: one of :data:`FAMILIES`.
        difficulty: an integer from 0 to 5; it scales the sizes of the numbers involved (0 is the easy
            tier: single-digit, one-step problems that need no code).
        seed: a non-negative integer.

    Returns:
        A :class:`~agentrl.core.task.Task` with id ``"tirmath/<family>/d<difficulty>/<seed>"`` and two
        oracle actions: a fenced Python program that prints the answer, then
        ``"The answer is \\boxed{<answer>}."``.

    Raises:
        ValueError: an unknown family (with a suggestion), a difficulty outside 0..5 or a negative seed.

    >>> task = generate_problem("modular", 2, seed=7)
    >>> task.id, task.family, task.difficulty
    ('tirmath/modular/d2/7', 'modular', 2)
    >>> task.prompt.endswith("Give the final answer as \\boxed{...}.")
    True
    >>> task == generate_problem("modular", 2, seed=7)
    True
    >>> task.oracle_actions[-1] == f"The answer is \\boxed{{{task.answer}}}."
    True

    """
    family = _check_family(family)
    difficulty = _check_difficulty(difficulty)
    try:
        seed = operator.index(seed)
    except TypeError:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}") from None
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    # crc32 (not hash()) so that the stream is stable across processes and Python versions
    rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(family.encode()), difficulty]))
    functions = _EASY_FUNCTIONS if difficulty == EASY else _FAMILY_FUNCTIONS
    prompt, answer, code = functions[family](rng, difficulty)
    return Task(
        id=f"{ID_PREFIX}/{family}/d{difficulty}/{seed}",
        prompt=prompt,
        answer=answer,
        family=family,
        difficulty=difficulty,
        oracle_actions=_oracle_actions(code, answer),
        metadata={"source": ID_PREFIX, "family": family, "difficulty": difficulty, "seed": seed},
    )


def parse_task_id(task_id: str) -> tuple[str, int, int]:
    """Split a procedural task id into ``(family, difficulty, seed)``.

    Raises:
        UnknownTask: the id is not of the form ``"tirmath/<family>/d<0-5>/<seed>"``; the message
            says what is wrong (and suggests a family for a misspelt one).

    """
    form = f"procedural ids look like '{ID_PREFIX}/<family>/d<0-5>/<seed>', e.g. '{ID_PREFIX}/modular/d3/17'"
    match = _ID_PATTERN.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise UnknownTask(task_id, hint=form)
    family, difficulty, seed = match["family"], int(match["difficulty"]), int(match["seed"])
    if family not in _FAMILY_FUNCTIONS:
        try:
            _check_family(family)
        except ValueError as exc:
            raise UnknownTask(task_id, hint=str(exc)) from None
    if difficulty not in DIFFICULTIES:
        raise UnknownTask(task_id, hint=f"difficulty must be d0 to d5; {form}")
    return family, difficulty, seed


#: The splits of the procedural problems: ``"test"`` holds ``TEST_PERCENT`` percent of the distinct problems.
SPLITS = ("train", "test")
TEST_PERCENT = 30


def problem_split(task: Task) -> str:
    """``"test"`` or ``"train"``: a fixed partition by the problem's text (crc32), not by its seed.

    Two seeds that draw the same problem (the easy tier has 413 distinct ones) fall in the same split, so
    a model trained on ``split="train"`` never saw a ``"test"`` problem.

    >>> problem_split(generate_problem("arithmetic", 0, seed=3)) in SPLITS
    True
    """
    return "test" if zlib.crc32(task.prompt.encode()) % 100 < TEST_PERCENT else "train"


def split_tasks(split: str, difficulty: int, families: Sequence[str] | None = None, seeds: int = 20_000) -> list[Task]:
    """The distinct problems of a split, each once (its lowest seed), drawn from seeds ``0..seeds-1``.

    For the easy tier that is every problem there is (a held-out set to evaluate on):

    >>> tasks = split_tasks("test", 0)
    >>> len(tasks) >= 100 and all(problem_split(t) == "test" for t in tasks)
    True
    """
    split = check_choice("split", split, SPLITS)
    distinct = _distinct_problems(difficulty, tuple(families or FAMILIES), seeds)
    return [task for task in distinct if problem_split(task) == split]


@functools.lru_cache(maxsize=8)
def _distinct_problems(difficulty: int, families: tuple[str, ...], seeds: int) -> tuple[Task, ...]:
    """Every distinct problem of ``families`` at ``difficulty`` over seeds ``0..seeds-1``, each at its lowest seed.

    Kept per process: it is 100,000 problems generated for the defaults (about 6 CPU-seconds), and the two splits of a
    tier, a benchmark's held-out set and its training source all read the same enumeration. Tasks are frozen.
    """
    seen: dict[str, Task] = {}
    for family in families:
        for seed in range(seeds):
            task = generate_problem(family, difficulty, seed)
            seen.setdefault(task.prompt, task)
    return tuple(seen.values())


class ProceduralMathSource:
    """An endless task source of procedural math problems (implements ``TaskSource``).

    Args:
        families: the families to draw from (default: all of :data:`FAMILIES`).
        difficulty: a fixed difficulty, or an inclusive range ``(lo, hi)`` drawn uniformly.
        split: ``"train"`` or ``"test"`` to draw only that split's problems (:func:`problem_split`), or None.

    Raises:
        ValueError: an unknown family, an empty family list or a difficulty outside 0..5.

    ``sample`` draws the family, the difficulty and a seed from the given generator only, so an
    env's ``reset(seed=...)`` is reproducible. ``get`` regenerates any valid ``tirmath`` id, even
    one outside this source's families or difficulty range.

    """

    def __init__(
        self,
        families: Sequence[str] | None = None,
        difficulty: int | tuple[int, int] = (1, 3),
        split: str | None = None,
    ) -> None:
        """Validate and store the families, the difficulty range and the split (see the class docstring)."""
        self.split = None if split is None else check_choice("split", split, SPLITS)
        if families is None:
            families = FAMILIES
        if isinstance(families, str):
            families = (families,)
        self.families: tuple[str, ...] = tuple(_check_family(f) for f in families)
        if not self.families:
            raise ValueError(f"families must not be empty; choose from: {', '.join(FAMILIES)}")
        self.difficulty_range: tuple[int, int] = level_range(difficulty, DIFFICULTIES)

    def __repr__(self) -> str:
        """Show the configuration."""
        split = "" if self.split is None else f", split={self.split!r}"
        return f"ProceduralMathSource(families={list(self.families)!r}, difficulty={self.difficulty_range!r}{split})"

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw a family, a difficulty and a seed from ``rng`` and generate that problem.

        With a ``split`` it draws again until the problem is in it: about 1.4 draws for ``"train"``, 3.3 for
        ``"test"``.
        """
        for _ in range(10_000):
            family = self.families[int(rng.integers(len(self.families)))]
            lo, hi = self.difficulty_range
            difficulty = int(rng.integers(lo, hi + 1))
            seed = int(rng.integers(0, 2**31))
            task = generate_problem(family, difficulty, seed)
            if self.split is None or problem_split(task) == self.split:
                return task
        raise RuntimeError(f"no {self.split!r} problem in 10000 draws from {self!r}")  # pragma: no cover

    def get(self, task_id: str) -> Task:
        """Regenerate a task from its id (``"tirmath/<family>/d<difficulty>/<seed>"``).

        Raises:
            UnknownTask: a malformed id, an unknown family or a difficulty outside 0..5.

        """
        return generate_problem(*parse_task_id(task_id))
