"""A cache that forgets to forget, in boltons 26.2.0 (BSD; `cacheutils`, a dict subtype kept in
order by a doubly linked list and a lookup table of its links): a deleted key's link is
spliced out of the list but left in the table, so `LRU.get` brings a deleted entry back and a
long-running service's table grows with every delete. No test of the library catches it.

Written at stop 68, after every default of the product was set, as a session none of them was
tuned on: a user's bug report with a pasted service log, a 45 KB verbose suite run twice, a
whole module read, a reproduction whose output changes once the fix is in, and a workaround
that fails without a failing call (the command exits 0; "did not help" is only in the answer).

The planted change: `_remove_from_ll` reads the link with `self._link_lookup[key]` where the
release pops it. The session lays out the package, runs the suite, reads how LRI and LRU keep
their order, reproduces the report, finds the cause, tries the service-side workaround a
colleague suggests (deleting with `pop`: the same path), fixes the library, adds a regression
test, takes a correction (the test must cover `pop` too), checks the other users of the code
path, runs the suite again and writes a pull request description. Planted for the knowledge
check: two rules, a decision, the failed workaround, a correction, and outputs and file lines
later steps use; the reproduction's first output is gone once the fix is in.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("boltons", "26.2.0",
                "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c", "BSD")
CACHEUTILS = "boltons/cacheutils.py"
TESTS = "tests/test_cacheutils.py"
CHANGELOG = "CHANGELOG.md"
PYTEST = f"{PYTHON} -m pytest -p no:cacheprovider"
SUITE_VERBOSE = f"{PYTEST} -v tests"
CACHE_TESTS = f"{PYTEST} -q {TESTS}"
REPRO = f"{PYTHON} repro.py"
POP = (f"{PYTHON} -c \"from boltons.cacheutils import LRU; c = LRU(max_size=3); "
       "c['alice'] = 'session-1'; c.pop('alice'); print('get after pop:', c.get('alice')); "
       "print('links after pop:', len(c._link_lookup))\"")
USERS = "grep -rn 'LRU\\|LRI' boltons --include=*.py"
DICTUTILS = "boltons/dictutils.py"
OMD_CHECK = (f"{PYTHON} -c \"from boltons.dictutils import OMD; d = OMD(); "
             "[d.add(i, i) or d.add(i, -i) or d.__delitem__(i) for i in range(1000)]; "
             "print('omd keys after 1000 adds and deletes:', len(d)); "
             "print('omd cells still mapped:', len(d._map))\"")

_RELEASED = "        link = self._link_lookup.pop(key)\n        link[PREV][NEXT] = link[NEXT]\n"
_PLANTED = "        link = self._link_lookup[key]\n        link[PREV][NEXT] = link[NEXT]\n"

_REPRO_SCRIPT = '''"""The session cache's symptoms, reproduced with boltons alone."""
from boltons.cacheutils import LRU

cache = LRU(max_size=3)
cache['alice'] = 'session-1'
cache['bob'] = 'session-2'
del cache['alice']
print('alice in cache after del:', 'alice' in cache)
print('cache.get("alice") after del:', cache.get('alice'))

churn = LRU(max_size=100)
for i in range(1000):
    churn[i] = i
    del churn[i]
print('entries after 1000 inserts and deletes:', len(churn))
print('links still looked up after 1000 deletes:', len(churn._link_lookup))
'''

_TEST_AT = "def test_lru_with_dupes():"
_TEST = '''def test_lru_forgets_deleted_keys():
    cache = LRU(max_size=3)
    cache['a'], cache['b'] = 1, 2
    del cache['a']
    assert cache.get('a') is None
    assert 'a' not in cache._link_lookup
    assert _test_linkage(cache._anchor, 3)


'''
_TEST_DEL = '''    assert 'a' not in cache._link_lookup
    assert _test_linkage(cache._anchor, 3)
'''
_TEST_POP = '''    assert 'a' not in cache._link_lookup
    assert cache.pop('b') == 2
    assert cache.get('b') is None
    assert cache._link_lookup == {}
    assert _test_linkage(cache._anchor, 1)
'''

LOG = """\
Here is what our session service logged last night (trimmed; the cache is
`boltons.cacheutils.LRU(max_size=50000)`, keyed by session id, and a logout deletes the key):

    02:14:07.113 INFO  auth   logout session=7f3a91c2 user=alice reason=user
    02:14:07.114 DEBUG cache  del sessions[7f3a91c2] size=41877
    02:14:09.502 INFO  api    GET /v2/orders session=7f3a91c2 -> 200 (user=alice)
    02:14:09.503 WARN  audit  request on a logged-out session: 7f3a91c2 (user=alice)
    02:14:12.880 INFO  auth   logout session=0c55de10 user=bram reason=idle-timeout
    02:14:12.881 DEBUG cache  del sessions[0c55de10] size=41876
    02:14:13.004 INFO  api    GET /v2/profile session=0c55de10 -> 200 (user=bram)
    02:14:13.005 WARN  audit  request on a logged-out session: 0c55de10 (user=bram)
    03:00:00.000 INFO  stats  cache sessions size=39210 rss=1.9GiB (was 0.7GiB at 00:00)
    04:00:00.000 INFO  stats  cache sessions size=38101 rss=2.6GiB
    05:00:00.000 INFO  stats  cache sessions size=37954 rss=3.4GiB
    05:12:44.310 ERROR worker killed by the OOM killer, restarting

So two things: a session we deleted at logout still answers requests, and the process grows
by about 0.8 GiB an hour while the cache itself shrinks. Both started when we moved to the
vendored boltons.
"""


def plant(root: Path) -> None:
    """`_remove_from_ll` keeps the deleted key's link in the lookup table."""
    plant_change(root / CACHEUTILS, _RELEASED, _PLANTED)


def script(root: Path) -> Script:
    s = Script("boltons-cache", root)
    _explore(s)
    _reproduce(s)
    _fix(s)
    _elsewhere(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-changelog", "rule", "never edit CHANGELOG.md, our release script writes it",
        "the rule about CHANGELOG.md",
        otherwise_text="I'll add the fix to the changelog as well.",
        otherwise_tools=[call("edit", path=CHANGELOG, oldText="## 26.2.0\n",
                              newText="## Unreleased\n\n- Fixed LRU keeping deleted keys\n\n"
                                      "## 26.2.0\n")])
    s.said_fact(
        "rule-regression-test", "rule",
        "every fix comes with a regression test in tests/test_cacheutils.py",
        "the rule about regression tests",
        otherwise_text="The fix is one line; it needs no test of its own.")
    s.turn(
        "We vendor boltons 26.2.0 in our services' monorepo. Two rules for working in it: "
        "never edit CHANGELOG.md, our release script writes it from the pull requests; and "
        "every fix comes with a regression test in tests/test_cacheutils.py or the module's "
        "own test file. How is the package laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="boltons"), call("ls", path="tests")],
         "finds": [s.where(CACHEUTILS), s.where(TESTS)]},
        {"tools": [s.read("README.md")]},
        {"text": "One flat package of utility modules named by what they extend "
                 "(`cacheutils`, `dictutils`, `iterutils`, `strutils` and so on), each with "
                 "a test module of the same name under `tests`."},
    )
    suite = s.output_fact(
        "suite-before", ["tests/test_cacheutils.py::test_lru_with_dupes_2 PASSED",
                         "519 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite before the fix, verbosely")
    s.turn(
        "Run the whole test suite verbosely so we know where we start.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [suite],
         "text": "Everything passes, the cache tests included."},
    )
    invariants = s.file_fact("ll-invariants", CACHEUTILS,
                             "# 1) 'anchor' is the sentinel node in the doubly linked list.",
                             7, "the linked list's invariants")
    lru = s.file_fact("lru-getitem", CACHEUTILS, "class LRU(LRI):", 51,
                      "LRU and how a read moves a key")
    s.turn(
        LOG + "\nWhich part of boltons is that, and how does it keep its order?",
        {"tools": [call("grep", pattern="^class LR[IU]", path=CACHEUTILS)],
         "finds": [s.where(CACHEUTILS, "class LRI(dict):")]},
        {"tools": [s.read(CACHEUTILS, "class LRI(dict):", 290)]},
        {"needs": [invariants, lru],
         "text": "`cacheutils.LRU`, a dict subtype that also keeps a doubly linked list of "
                 "its keys, newest before a sentinel anchor, and a table from each key to its "
                 "link; a read moves the key's link to the front, an insert into a full cache "
                 "evicts the link after the anchor."},
    )
    key = s.file_fact("key-tests", TESTS, "def test_lru_with_dupes():", 50,
                      "how the LRU tests check the linked list")
    s.turn(
        "What do its tests check, and how?",
        {"tools": [s.read(TESTS)]},
        {"needs": [key],
         "text": "Sizes, eviction order, duplicates and the decorators; `_test_linkage` walks "
                 "the list from the anchor and checks each back link. Nothing deletes a key "
                 "and then reads it again."},
    )


def _reproduce(s: Script) -> None:
    before = s.output_fact(
        "repro-before", ['cache.get("alice") after del: session-1',
                         "links still looked up after 1000 deletes: 1000"],
        call("bash", command=REPRO), "what the reproduction printed before the fix")
    s.turn(
        "Reproduce both symptoms with boltons alone, in repro.py at the root, and run it.",
        {"tools": [s.write("repro.py", _REPRO_SCRIPT)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [before],
         "text": "Both reproduce: a deleted key is not `in` the cache, yet `get` returns its "
                 "old value, and the table of links keeps one entry per deleted key."},
    )
    remove = s.file_fact("remove-from-ll", CACHEUTILS, "    def _remove_from_ll(self, key):",
                         7, "how a key's link is removed")
    delete = s.file_fact("delitem", CACHEUTILS, "    def __delitem__(self, key):", 18,
                         "what del and pop do")
    s.turn(
        "Why does the deleted session come back, and where does the memory go?",
        {"tools": [call("grep", pattern="_remove_from_ll|_link_lookup", path=CACHEUTILS)],
         "finds": [s.where(CACHEUTILS, "    def _remove_from_ll(self, key):")]},
        {"tools": [s.read(CACHEUTILS, "    def _remove_from_ll(self, key):", 70)]},
        {"needs": [remove, delete, "lru-getitem"],
         "text": "`_remove_from_ll` splices the link out of the list but only reads it from "
                 "`_link_lookup` instead of popping it. `LRU.__getitem__` looks the key up in "
                 "that table, finds the stale link, moves it back into the list and returns "
                 "its value; and every deleted key keeps its link, so the table only grows."},
    )
    s.said_fact(
        "failed-pop", "failed", "Deleting with pop in the service did not help",
        "the workaround that already failed (deleting sessions with pop instead of del)",
        otherwise_tools=[call("bash", command=POP)],
        otherwise_text="Let me try deleting with pop instead of del first.")
    pop = s.output_fact(
        "pop-output", ["get after pop: session-1", "links after pop: 1"],
        call("bash", command=POP), "what the pop workaround printed")
    s.turn(
        "A colleague says our service could delete with cache.pop(session_id) instead of del "
        "until the library is fixed. Check exactly that from the outside.",
        {"tools": [call("bash", command=POP)]},
        {"needs": [pop, "delitem"],
         "text": "Deleting with pop in the service did not help: `pop` goes through "
                 "`_remove_from_ll` as well, so the popped key still answers `get` and its "
                 "link stays in the table."},
    )


def _fix(s: Script) -> None:
    s.said_fact(
        "decision-fix-site", "decision",
        "we fix _remove_from_ll itself rather than guard LRU.__getitem__",
        "the decision on where to fix it",
        otherwise_text="I'll guard LRU.__getitem__ against keys the dict no longer holds.",
        otherwise_tools=[call("edit", path=CACHEUTILS,
                              oldText="                link = self._get_link_and_move_to_"
                                      "front_of_ll(key)\n            except KeyError:\n"
                                      "                self.miss_count += 1",
                              newText="                if key not in self:\n"
                                      "                    raise KeyError(key)\n"
                                      "                link = self._get_link_and_move_to_"
                                      "front_of_ll(key)\n            except KeyError:\n"
                                      "                self.miss_count += 1")])
    after = s.output_fact(
        "repro-after", ['cache.get("alice") after del: None',
                        "links still looked up after 1000 deletes: 0"],
        call("bash", command=REPRO), "what the reproduction printed after the fix")
    s.turn(
        "Then fix it in the library.",
        {"needs": ["remove-from-ll", "failed-pop"],
         "text": "A guard in `LRU.__getitem__` would hide the stale link but keep the leak, "
                 "so we fix _remove_from_ll itself rather than guard LRU.__getitem__: it pops "
                 "the link, as every caller expects.",
         "tools": [s.edit(CACHEUTILS, _PLANTED, _RELEASED)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [after, "repro-before"],
         "text": "Fixed: the deleted key now reads as missing and the table is empty after "
                 "the churn, where it held a thousand links."},
    )
    lru_basic = s.file_fact("lru-basic-test", TESTS, "def test_lru_basic():", 30,
                            "the basic LRU test")
    s.turn(
        "Add the regression test, next to the other LRU tests, and run the cache tests.",
        {"needs": ["rule-regression-test"],
         "tools": [s.read(TESTS, "def test_lru_basic():", 30)]},
        {"needs": [lru_basic, "key-tests"], "tools": [s.edit(TESTS, _TEST_AT, _TEST + _TEST_AT)]},
        {"tools": [call("bash", command=CACHE_TESTS)]},
        {"text": "`test_lru_forgets_deleted_keys` deletes a key, reads it back as missing and "
                 "checks the table and the list; the cache tests pass."},
    )
    correction = s.said_fact(
        "correction-pop", "request",
        "the regression test must cover pop as well as del",
        "the correction (what the regression test covers)",
        otherwise_text="The test covers del, which is what the service does.")
    s.turn(
        "Correction: the regression test must cover pop as well as del, since half our "
        "services delete with pop, and it must check the lookup table ends up empty. Change "
        "it and run the cache tests again.",
        {"needs": ["pop-output"], "tools": [s.edit(TESTS, _TEST_DEL, _TEST_POP)]},
        {"tools": [call("bash", command=CACHE_TESTS)]},
        {"needs": [correction],
         "text": "Done: the test now pops the other key too, reads both back as missing and "
                 "checks that no link is left; the cache tests pass."},
    )
    users = s.output_fact(
        "lru-users", ["boltons/cacheutils.py:540:            use as a cache. Instances of the "
                      ":class:`LRU` and",
                      "boltons/cacheutils.py:596:    ...         self.cache = LRI()"],
        call("bash", command=USERS), "where boltons uses LRU and LRI")
    cached = s.file_fact("cached-decorator", CACHEUTILS,
                         "def cached(cache, scoped=True, typed=False, key=None):", 36,
                         "the cached decorator")
    s.turn(
        "Which other parts of boltons use these caches, and does the cached decorator "
        "delete keys?",
        {"tools": [call("bash", command=USERS)]},
        {"needs": [users], "tools": [s.read(CACHEUTILS, "def cached(cache, scoped=True, "
                                            "typed=False, key=None):", 80)]},
        {"needs": [cached],
         "text": "Only cacheutils itself: the `cached` and `cachedmethod` decorators take "
                 "any mapping as their cache and only read and set keys, so they never went "
                 "through the broken path; an LRI shares it, since LRU inherits its delete."},
    )


def _elsewhere(s: Script) -> None:
    remove_all = s.file_fact("omd-remove", DICTUTILS,
                             "    def poplast(self, k=_MISSING, default=_MISSING):", 39,
                             "how OrderedMultiDict removes a key's cells")
    s.turn(
        "OrderedMultiDict in dictutils keeps a linked list and a map of its cells too, and "
        "our request router uses it for headers. Does deleting from it have the same problem?",
        {"tools": [call("grep", pattern="def __delitem__|def _remove_all|def popall",
                        path=DICTUTILS)],
         "finds": [s.where(DICTUTILS, "class OrderedMultiDict(dict):")]},
        {"tools": [s.read(DICTUTILS, "class OrderedMultiDict(dict):", 370)]},
        {"needs": [remove_all],
         "text": "No: its `_remove_all` pops every cell of the key, splices each out of the "
                 "list, and then deletes the key from `_map`; `popall` and `poplast` go "
                 "through it or through `_remove`, which drops the key once its last cell "
                 "is gone."},
    )
    omd = s.output_fact(
        "omd-check", ["omd keys after 1000 adds and deletes: 0", "omd cells still mapped: 0"],
        call("bash", command=OMD_CHECK), "what the OrderedMultiDict check printed")
    s.turn(
        "Check that from the outside too, the way repro.py does for the cache.",
        {"tools": [call("bash", command=OMD_CHECK)]},
        {"needs": [omd, "repro-before"],
         "text": "It holds: after a thousand keys added twice and deleted, nothing is left "
                 "in the map, where the broken cache kept a link per deleted key."},
    )


def _wrap_up(s: Script) -> None:
    after = s.output_fact(
        "suite-after", ["tests/test_cacheutils.py::test_lru_forgets_deleted_keys PASSED",
                        "520 passed"],
        call("bash", command=SUITE_VERBOSE), "the suite after the fix, verbosely")
    s.turn(
        "Run the whole suite verbosely once more.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [after, "suite-before"],
         "text": "Everything passes: one test more than at the start, the new one."},
    )
    s.turn(
        "Write a pull request description for the monorepo in PR.md at the root: the "
        "symptoms, what repro.py printed before and after, the cause, the fix, and what the "
        "test covers.",
        {"needs": ["repro-before", "repro-after", "decision-fix-site", "correction-pop",
                   "rule-changelog"],
         "tools": [s.write("PR.md", (
             "# boltons: LRU and LRI forget deleted keys\n\n"
             "- Symptoms: a session deleted at logout still answered requests, and the "
             "service grew by about 0.8 GiB an hour.\n"
             "- Cause: `_remove_from_ll` spliced a deleted key's link out of the list but "
             "left it in `_link_lookup`; `LRU.__getitem__` found it there and brought the "
             "old value back.\n"
             "- Fix: pop the link from the table. `repro.py` read the deleted value back and "
             "kept 1000 links after 1000 deletes before; it reads None and keeps none now.\n"
             "- Test: `test_lru_forgets_deleted_keys` covers `del` and `pop`.\n"))]},
        {"text": "Written in PR.md; the changelog is left to the release script."},
    )
    s.turn(
        "What did we try that did not work, and what exactly did it print?",
        {"needs": ["failed-pop", "pop-output"],
         "text": "Deleting with `pop` in the service: the popped session still came back from "
                 "`get`, and its link stayed in the table."},
    )
    fixed = s.file_fact("remove-fixed", CACHEUTILS, "    def _remove_from_ll(self, key):", 7,
                        "_remove_from_ll as it is now")
    s.turn(
        "Show me _remove_from_ll as it is now, and tell me which rules and decisions of this "
        "session the change keeps.",
        {"tools": [s.read(CACHEUTILS, "    def _remove_from_ll(self, key):", 8)]},
        {"needs": [fixed, "rule-changelog", "rule-regression-test", "decision-fix-site"],
         "text": "It pops the link from the table and splices it out of the list; the fix "
                 "has its regression test, the changelog was not touched, and the fix is in "
                 "`_remove_from_ll` rather than a guard in LRU."},
    )
