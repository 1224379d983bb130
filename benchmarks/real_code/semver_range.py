"""A dependency bot that took breaking 0.x minors, in semver 7.7.2 from npm (ISC; the semantic
version parser npm uses, pure JavaScript without dependencies, its range module 556 lines):
a range is desugared into comparators, and the planted change gives a caret on a full 0.x
version the bound of a 1.x one, so `^0.4.2` desugars to `>=0.4.2 <1.0.0-0` where the README
promises `<0.5.0-0`, and maxSatisfying picks 0.7.0 from a registry that has 0.4.5. Carets
on 1.x and above, on 0.0.x, with an x for the patch (`^0.9`) or with a prerelease are right.

The suite's first session on code from npm, run with Node's own test runner (`node --test`,
whose TAP output a non-terminal gets), written at stop 72 as a session none of the product's
defaults was tuned on: a team's fork of semver, which their dependency bot resolves ranges
with, and the bot's night pasted (two pull requests that took 0.x minors and broke two
builds), a rule against touching the audited regular expressions, a rule about how a run is
reported, a reproduction the assistant writes (its output changes once the fix is in), a
56 KB run of the team's `node:test` files with ten failures whose YAML details print what a
range desugared to, a colleague's guess that does not help (loose ranges; the command exits
0), a correction of the regression test, and a changelog entry.

The session lays out the fork, reads the README's promise for carets and how maxSatisfying
picks, writes the reproduction, runs the suite (ten failures), tries loose ranges, probes a
spread of carets, reads the caret code, the whole range module and the caret pattern, fixes
the bound, runs the reproduction, the probe and the range tests again, adds a regression test
and takes a correction (it must also check the range with includePrerelease), reads why the
other carets and the tilde were right, runs the suite again, writes the changelog entry and
answers what failed and what the fixed lines are. Planted for the knowledge check: two rules,
a decision, the failed approach, a correction, and outputs and file lines later steps use;
the suite's failures (from the middle of its output) and the reproduction's first output are
gone once the fix is in. The tarball ships no tests: the team's test files, its changelog
and its version are planted with the bug.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import Script, call, plant_change
from benchmarks.real_code.sources import NPM, Source

SOURCE = Source("semver", "7.7.2",
                "290a29b26644b16ad172c21797c5523788b537a7784ffd175607c4812653504e", "ISC",
                registry=NPM)
RANGE = "classes/range.js"
RE = "internal/re.js"
MAX_SATISFYING = "ranges/max-satisfying.js"
README = "README.md"
CHANGELOG = "CHANGELOG.md"
PACKAGE_JSON = "package.json"
RANGES_TESTS = "test/ranges.test.js"
REPRO_FILE = "repro.js"
PROBE_FILE = "probe_carets.js"
# Node's own runner, as the team runs it: a non-terminal gets its TAP reporter.
SUITE = "node --test test/"
RANGES_RUN = f"node --test {RANGES_TESTS}"
REPRO = f"node {REPRO_FILE}"
REPRO_LOOSE = f"node {REPRO_FILE} --loose"
PROBE = f"node {PROBE_FILE}"

_RELEASED = "          }${z} <${M}.${+m + 1}.0-0`\n"
_PLANTED = "          }${z} <${+M + 1}.0.0-0`\n"
_CARET = "const replaceCaret = (comp, options) => {"
_TILDE = "const replaceTilde = (comp, options) => {"
_VERSION = '  "version": "7.7.2",\n'
_FORK_VERSION = '  "version": "7.7.2-acme.3",\n'

_CHANGELOG = """\
# Changelog

Our fork of npm's semver, published to the internal registry as @acme/semver. Upstream's
own changes are in its repository's CHANGELOG.md; this file has ours.

## Unreleased

- no changes yet

## 7.7.2-acme.3 (2025-06-10)

- ranges: the caret desugaring's branches tidied up, no change in behaviour intended
- package.json: the version is ours, 7.7.2-acme.3

## 7.7.2-acme.2 (2025-05-28)

- test: our own suite on node:test, run with `node --test test/` (upstream's tap suite is
  not in the published tarball)

## 7.7.2-acme.1 (2025-05-20)

- forked from semver 7.7.2 as published on npm
"""
_CHANGES_AT = "- no changes yet\n"
_CHANGES = ("- ranges: a caret on a full 0.x version stops before the next minor again\n"
            "  (`^0.4.2` is `>=0.4.2 <0.5.0-0`); since 7.7.2-acme.3 it let every 0.x minor\n"
            "  through (DEP-1432)\n")

_COMPARE_TESTS = """\
'use strict'
// Our fork's tests of versions on their own: order, validity, increments, differences.
const { describe, test } = require('node:test')
const assert = require('node:assert')
const semver = require('..')

// [a, b, compare(a, b)]
const ORDER = [
  ['1.0.0', '1.0.0', 0], ['1.0.0', '1.0.1', -1], ['1.0.1', '1.0.0', 1],
  ['1.2.3', '1.10.0', -1], ['1.10.0', '1.9.9', 1], ['2.0.0', '10.0.0', -1],
  ['0.0.1', '0.0.2', -1], ['0.1.0', '0.0.9', 1], ['0.9.0', '0.10.0', -1],
  ['1.0.0-alpha', '1.0.0', -1], ['1.0.0', '1.0.0-rc.1', 1],
  ['1.0.0-alpha', '1.0.0-alpha.1', -1], ['1.0.0-alpha.1', '1.0.0-alpha.beta', -1],
  ['1.0.0-alpha.beta', '1.0.0-beta', -1], ['1.0.0-beta', '1.0.0-beta.2', -1],
  ['1.0.0-beta.2', '1.0.0-beta.11', -1], ['1.0.0-beta.11', '1.0.0-rc.1', -1],
  ['1.0.0-rc.1', '1.0.0', -1], ['1.2.3-4', '1.2.3-10', -1], ['1.2.3-a.10', '1.2.3-a.9', 1],
  ['1.2.3+build.1', '1.2.3+build.2', 0], ['1.2.3-0', '1.2.3-alpha', -1],
  ['3.0.0-rc.1+sha.5114f85', '3.0.0-rc.1', 0], ['0.0.0-0', '0.0.0', -1],
  ['4.5.6', '4.5.6-x.y.z', 1], ['7.7.2', '7.7.10', -1], ['7.10.0', '7.9.99', 1],
]

// [version, valid(version)]
const VALID = [
  ['1.2.3', '1.2.3'], ['v1.2.3', '1.2.3'], ['=1.2.3', null], ['1.2.3-rc.1', '1.2.3-rc.1'],
  ['1.2.3+build', '1.2.3'], ['1.2', null], ['1.2.3.4', null], ['01.2.3', null],
  ['1.02.3', null], ['1.2.03', null], ['1.2.3-01', null], ['x.y.z', null], ['', null],
  ['9007199254740991.0.0', '9007199254740991.0.0'], ['9007199254740992.0.0', null],
]

// [version, clean(version)]
const CLEAN = [
  ['  1.2.3  ', '1.2.3'], ['=v1.2.3', '1.2.3'], ['v1.2.3-rc.1', '1.2.3-rc.1'],
  ['~1.2.3', null], ['1.2.3 4', null],
]

// [version, release, identifier, inc(...)]
const INC = [
  ['1.2.3', 'major', undefined, '2.0.0'], ['1.2.3', 'minor', undefined, '1.3.0'],
  ['1.2.3', 'patch', undefined, '1.2.4'], ['1.2.3-rc.1', 'patch', undefined, '1.2.3'],
  ['1.2.0-rc.1', 'minor', undefined, '1.2.0'], ['1.0.0-rc.1', 'major', undefined, '1.0.0'],
  ['1.2.3', 'premajor', 'rc', '2.0.0-rc.0'], ['1.2.3', 'preminor', 'rc', '1.3.0-rc.0'],
  ['1.2.3', 'prepatch', 'rc', '1.2.4-rc.0'], ['1.2.3-rc.0', 'prerelease', 'rc', '1.2.3-rc.1'],
  ['1.2.3-rc.9', 'prerelease', 'rc', '1.2.3-rc.10'],
  ['1.2.3', 'prerelease', 'beta', '1.2.4-beta.0'],
  ['1.2.3-alpha.4', 'prerelease', 'beta', '1.2.3-beta.0'],
  ['0.4.2', 'minor', undefined, '0.5.0'],
  ['0.0.7', 'patch', undefined, '0.0.8'], ['0.12.1', 'major', undefined, '1.0.0'],
  ['1.2.3', 'release', undefined, null], ['1.2.3-rc.4', 'release', undefined, '1.2.3'],
  ['1.2.3', 'nonsense', undefined, null], ['not a version', 'patch', undefined, null],
]

// [a, b, diff(a, b)]
const DIFF = [
  ['1.2.3', '2.0.0', 'major'], ['1.2.3', '1.3.0', 'minor'], ['1.2.3', '1.2.4', 'patch'],
  ['1.2.3', '1.2.3', null], ['1.2.3-rc.1', '1.2.3', 'patch'],
  ['1.2.3', '2.0.0-rc.1', 'premajor'],
  ['1.2.3', '1.3.0-rc.1', 'preminor'], ['1.2.3', '1.2.4-rc.1', 'prepatch'],
  ['1.2.3-rc.1', '1.2.3-rc.2', 'prerelease'], ['0.4.2', '0.7.0', 'minor'],
  ['0.12.1', '0.14.0', 'minor'], ['0.0.7', '0.0.9', 'patch'],
]

// [input, coerce(input)]
const COERCE = [
  ['1', '1.0.0'], ['1.2', '1.2.0'],
  ['v3.4 replaced by v3.4.1', '3.4.0'], ['42.6.7.9.3-alpha', '42.6.7'],
  ['version 0.7', '0.7.0'], ['release-2025.6.1', '2025.6.1'], ['no digits here', null],
  ['1.2.3-rc.1', '1.2.3'], ['', null], ['0.12', '0.12.0'],
]

describe('compare', () => {
  for (const [a, b, want] of ORDER) {
    test(`compare(${a}, ${b}) is ${want}`, () => {
      assert.strictEqual(semver.compare(a, b), want)
      assert.strictEqual(semver.compare(b, a), want === 0 ? 0 : -want)
    })
  }
  test('sort puts prereleases before their release', () => {
    assert.deepStrictEqual(semver.sort(['1.0.0', '1.0.0-rc.1', '0.9.0', '1.0.0-alpha']),
      ['0.9.0', '1.0.0-alpha', '1.0.0-rc.1', '1.0.0'])
  })
  test('rsort is sort reversed', () => {
    assert.deepStrictEqual(semver.rsort(['0.4.2', '0.7.0', '0.4.5', '0.5.0']),
      ['0.7.0', '0.5.0', '0.4.5', '0.4.2'])
  })
  test('compareBuild orders builds', () => {
    assert.strictEqual(semver.compareBuild('1.2.3+build.1', '1.2.3+build.2'), -1)
  })
})

describe('valid', () => {
  for (const [input, want] of VALID) {
    test(`valid(${JSON.stringify(input)}) is ${want}`, () => {
      assert.strictEqual(semver.valid(input), want)
    })
  }
})

describe('clean', () => {
  for (const [input, want] of CLEAN) {
    test(`clean(${JSON.stringify(input)}) is ${want}`, () => {
      assert.strictEqual(semver.clean(input), want)
    })
  }
})

describe('inc', () => {
  for (const [version, release, identifier, want] of INC) {
    test(`inc(${version}, ${release}${identifier ? ', ' + identifier : ''}) is ${want}`, () => {
      assert.strictEqual(semver.inc(version, release, identifier), want)
    })
  }
})

describe('diff', () => {
  for (const [a, b, want] of DIFF) {
    test(`diff(${a}, ${b}) is ${want}`, () => {
      assert.strictEqual(semver.diff(a, b), want)
    })
  }
})

describe('coerce', () => {
  for (const [input, want] of COERCE) {
    test(`coerce(${JSON.stringify(input)}) is ${want}`, () => {
      const coerced = semver.coerce(input)
      assert.strictEqual(coerced && coerced.version, want)
    })
  }
})

describe('parts', () => {
  test('major, minor and patch of a prerelease', () => {
    assert.deepStrictEqual(
      [semver.major('0.12.1-rc.2'), semver.minor('0.12.1-rc.2'), semver.patch('0.12.1-rc.2')],
      [0, 12, 1])
  })
  test('prerelease identifiers', () => {
    assert.deepStrictEqual(semver.prerelease('1.2.3-rc.1.canary'), ['rc', 1, 'canary'])
    assert.strictEqual(semver.prerelease('1.2.3'), null)
  })
  test('parse drops the v', () => {
    assert.strictEqual(semver.parse('v0.4.2').version, '0.4.2')
  })
})
"""

_RANGES_TESTS = """\
'use strict'
// Our fork's tests of ranges: what each kind of range lets through, and what it desugars to.
const { describe, test } = require('node:test')
const assert = require('node:assert')
const semver = require('..')

// [range, versions it includes, versions it excludes]
const CARET = [
  ['^1.2.3', ['1.2.3', '1.2.4', '1.9.9'], ['1.2.2', '2.0.0', '2.0.0-rc.1']],
  ['^1.2', ['1.2.0', '1.8.1'], ['1.1.9', '2.0.0']],
  ['^1', ['1.0.0', '1.99.0'], ['0.9.9', '2.0.0']],
  ['^1.x', ['1.0.0', '1.4.2'], ['2.0.0']],
  ['^2.0.0', ['2.0.0', '2.17.3'], ['1.9.9', '3.0.0']],
  ['^0.2.3', ['0.2.3', '0.2.9'], ['0.2.2', '0.3.0', '1.0.0']],
  ['^0.1.0', ['0.1.0', '0.1.12'], ['0.0.9', '0.2.0']],
  ['^0.2', ['0.2.0', '0.2.9'], ['0.1.9', '0.3.0']],
  ['^0.0.3', ['0.0.3'], ['0.0.2', '0.0.4']],
  ['^0.0', ['0.0.0', '0.0.9'], ['0.1.0']],
  ['^0.x', ['0.0.0', '0.9.9'], ['1.0.0']],
  ['^1.2.3-beta.2', ['1.2.3-beta.2', '1.2.3-beta.4', '1.2.3', '1.5.0'],
    ['1.2.3-beta.1', '1.2.4-beta.2', '2.0.0']],
  ['^0.2.3-beta', ['0.2.3-beta', '0.2.3-pr.2', '0.2.3'], ['0.2.4-alpha', '0.3.0']],
  ['^0.0.3-beta', ['0.0.3-beta', '0.0.3-pr.2', '0.0.3'], ['0.0.4']],
  ['^ 1.2.3', ['1.2.3', '1.3.0'], ['2.0.0']],
  ['^1.2.3 || ^2.1.0', ['1.2.3', '2.5.0'], ['2.0.0', '3.0.0']],
]

const TILDE = [
  ['~1.2.3', ['1.2.3', '1.2.9'], ['1.2.2', '1.3.0']],
  ['~1.2', ['1.2.0', '1.2.9'], ['1.3.0']],
  ['~1', ['1.0.0', '1.9.9'], ['2.0.0']],
  ['~0.2.3', ['0.2.3', '0.2.9'], ['0.3.0']],
  ['~0.2', ['0.2.0', '0.2.5'], ['0.3.0']],
  ['~0', ['0.0.0', '0.9.9'], ['1.0.0']],
  ['~>1.2.3', ['1.2.3', '1.2.4'], ['1.3.0']],
  ['~1.2.3-beta.2', ['1.2.3-beta.2', '1.2.3-beta.4', '1.2.7'], ['1.2.4-beta.2', '1.3.0']],
]

const X_RANGES = [
  ['*', ['0.0.0', '1.2.3', '99.0.0'], ['1.2.3-rc.1']],
  ['1.x', ['1.0.0', '1.9.9'], ['2.0.0', '0.9.9']],
  ['1.2.x', ['1.2.0', '1.2.9'], ['1.3.0']],
  ['1.2.*', ['1.2.4'], ['1.3.0']],
  ['0.x', ['0.0.1', '0.99.0'], ['1.0.0']],
  ['>1.2', ['1.3.0'], ['1.2.9']],
  ['<=0.7.x', ['0.7.9', '0.1.0'], ['0.8.0']],
  ['', ['1.2.3'], ['1.2.3-rc.1']],
]

const HYPHEN = [
  ['1.2.3 - 2.3.4', ['1.2.3', '2.3.4'], ['1.2.2', '2.3.5']],
  ['1.2 - 2.3.4', ['1.2.0', '2.0.0'], ['1.1.9', '2.4.0']],
  ['1.2.3 - 2.3', ['2.3.9'], ['2.4.0']],
  ['1.2.3 - 2', ['2.9.9'], ['3.0.0']],
  ['0.4.2 - 0.4.9', ['0.4.5'], ['0.5.0']],
]

const PRIMITIVES = [
  ['>=1.2.3', ['1.2.3', '5.0.0'], ['1.2.2']],
  ['>1.2.3', ['1.2.4'], ['1.2.3']],
  ['<1.2.3', ['1.2.2', '0.0.1'], ['1.2.3', '1.2.3-rc.1']],
  ['<=1.2.3', ['1.2.3'], ['1.2.4']],
  ['=1.2.3', ['1.2.3'], ['1.2.4']],
  ['1.2.3', ['1.2.3', 'v1.2.3'], ['1.2.4']],
  ['>=0.4.2 <0.5.0', ['0.4.2', '0.4.9'], ['0.5.0', '0.4.1']],
  ['>=1.0.0 <1.0.0', [], ['1.0.0']],
]

const PRERELEASE = [
  ['>1.2.3-alpha.3', ['1.2.3-alpha.7', '3.4.5'], ['3.4.5-alpha.9']],
  ['>=1.2.3-rc.1 <1.2.4', ['1.2.3-rc.2', '1.2.3'], ['1.2.4-rc.1']],
  ['^1.2.3-rc.1', ['1.2.3-rc.1', '1.9.0'], ['1.3.0-rc.1']],
  ['1.2.3-rc.1', ['1.2.3-rc.1'], ['1.2.3-rc.2']],
]

const suite = (name, table) => describe(name, () => {
  for (const [range, included, excluded] of table) {
    for (const version of included) {
      test(`${range} includes ${version}`, () => {
        assert.strictEqual(semver.satisfies(version, range), true)
      })
    }
    for (const version of excluded) {
      test(`${range} excludes ${version}`, () => {
        assert.strictEqual(semver.satisfies(version, range), false)
      })
    }
  }
})

suite('caret', CARET)

// [range, the comparators it desugars to]
const DESUGARED = [
  ['^1.2.3', '>=1.2.3 <2.0.0-0'], ['^0.2.3', '>=0.2.3 <0.3.0-0'],
  ['^0.0.3', '>=0.0.3 <0.0.4-0'],
  ['^0.1.0', '>=0.1.0 <0.2.0-0'], ['^0.2', '>=0.2.0 <0.3.0-0'], ['^0.0', '<0.1.0-0'],
  ['^1.2.x', '>=1.2.0 <2.0.0-0'], ['^0.x', '<1.0.0-0'],
  ['^1.2.3-beta.2', '>=1.2.3-beta.2 <2.0.0-0'], ['^0.0.3-beta', '>=0.0.3-beta <0.0.4-0'],
  ['~1.2.3', '>=1.2.3 <1.3.0-0'], ['~0.2.3', '>=0.2.3 <0.3.0-0'], ['~1', '>=1.0.0 <2.0.0-0'],
  ['1.2.x', '>=1.2.0 <1.3.0-0'], ['1.2.3 - 2.3', '>=1.2.3 <2.4.0-0'],
  ['1.2.3 - 2.3.4', '>=1.2.3 <=2.3.4'], ['>1.2', '>=1.3.0'], ['*', '*'],
]

describe('desugaring', () => {
  for (const [range, want] of DESUGARED) {
    test(`${range} desugars to ${want}`, () => {
      assert.strictEqual(semver.validRange(range), want)
    })
  }
})

// The same ranges with includePrerelease, as our canary channel resolves them.
const WITH_PRERELEASES = [
  ['^1.2.3', '1.5.0-rc.1', true], ['^1.2.3', '2.0.0-rc.1', false],
  ['^0.2.3', '0.2.4-rc.1', true], ['^0.2.3', '0.3.0-rc.1', false],
  ['~1.2.3', '1.2.4-beta.0', true], ['~1.2.3', '1.3.0-beta.0', false],
  ['1.2.x', '1.2.7-rc.2', true], ['*', '3.0.0-alpha.1', true],
  ['^0.0.3', '0.0.3-rc.1', true], ['^0.0.3', '0.0.4-rc.1', false],
]

describe('includePrerelease', () => {
  for (const [range, version, want] of WITH_PRERELEASES) {
    test(`${range} ${want ? 'includes' : 'excludes'} ${version} with prereleases`, () => {
      assert.strictEqual(semver.satisfies(version, range, { includePrerelease: true }), want)
    })
  }
})

suite('tilde', TILDE)
suite('x-ranges', X_RANGES)
suite('hyphen', HYPHEN)
suite('primitives', PRIMITIVES)
suite('prerelease', PRERELEASE)

describe('loose', () => {
  test('a loose range takes a v and an = before a version', () => {
    assert.strictEqual(semver.satisfies('v1.2.4', '=v1.2.x', { loose: true }), true)
  })
  test('a strict range refuses a loose version', () => {
    assert.strictEqual(semver.validRange('>=01.2.3'), null)
  })
  test('a loose range with leading zeros', () => {
    assert.strictEqual(semver.validRange('>=01.2.3', { loose: true }), '>=1.2.3')
  })
})
"""

_RESOLVE_TESTS = """\
'use strict'
// What depbot asks of us: the newest version a range allows, the oldest, and whether a
// release is past a range (an upgrade that needs a person to look at it).
const { describe, test } = require('node:test')
const assert = require('node:assert')
const semver = require('..')

// Versions as a registry lists them, oldest first.
const REGISTRY = {
  'kv-store': ['1.0.0', '1.1.0', '1.3.0', '1.9.1', '2.0.0-rc.1', '2.0.0', '2.1.4'],
  'shell-quote-lite': ['0.1.0', '0.1.4', '0.2.0', '0.2.1', '0.3.0-beta.1'],
  'chart-axis': ['0.9.0', '0.9.3', '0.10.0', '0.10.2', '0.11.0', '1.0.0'],
  'fixed-clock': ['0.0.1', '0.0.2', '0.0.3', '0.0.4'],
  'log-sink': ['3.1.0', '3.1.1', '3.2.0-rc.0', '3.2.0', '4.0.0-alpha.2'],
}

// [package, range, maxSatisfying, minSatisfying]
const PICKS = [
  ['kv-store', '^1.1.0', '1.9.1', '1.1.0'], ['kv-store', '~1.1.0', '1.1.0', '1.1.0'],
  ['kv-store', '^2.0.0-rc.1', '2.1.4', '2.0.0-rc.1'], ['kv-store', '>=3', null, null],
  ['shell-quote-lite', '^0.1.0', '0.1.4', '0.1.0'],
  ['shell-quote-lite', '^0.2', '0.2.1', '0.2.0'],
  ['shell-quote-lite', '0.x', '0.2.1', '0.1.0'],
  ['chart-axis', '^0.9.0', '0.9.3', '0.9.0'], ['chart-axis', '^0.10.0', '0.10.2', '0.10.0'],
  ['chart-axis', '~0.10', '0.10.2', '0.10.0'],
  ['chart-axis', '>=0.10.0 <1', '0.11.0', '0.10.0'],
  ['fixed-clock', '^0.0.2', '0.0.2', '0.0.2'], ['fixed-clock', '^0.0', '0.0.4', '0.0.1'],
  ['log-sink', '^3.1.0', '3.2.0', '3.1.0'], ['log-sink', '^4.0.0-alpha.1', '4.0.0-alpha.2',
    '4.0.0-alpha.2'],
]

describe('maxSatisfying', () => {
  for (const [name, range, newest] of PICKS) {
    test(`${name}@${range} resolves to ${newest}`, () => {
      assert.strictEqual(semver.maxSatisfying(REGISTRY[name], range), newest)
    })
  }
})

describe('minSatisfying', () => {
  for (const [name, range, , oldest] of PICKS) {
    test(`${name}@${range} starts at ${oldest}`, () => {
      assert.strictEqual(semver.minSatisfying(REGISTRY[name], range), oldest)
    })
  }
})

// [range, minVersion(range)]
const MIN_VERSION = [
  ['^1.2.3', '1.2.3'], ['^0.2.3', '0.2.3'], ['>1.2.3', '1.2.4'], ['>=1.2.3-rc.1', '1.2.3-rc.1'],
  ['~0.0', '0.0.0'], ['>1.2.3-rc.1', '1.2.3-rc.1.0'], ['<0.0.0-0', null],
]

describe('minVersion', () => {
  for (const [range, want] of MIN_VERSION) {
    test(`minVersion(${range}) is ${want}`, () => {
      const found = semver.minVersion(range)
      assert.strictEqual(found && found.version, want)
    })
  }
})

// [version, range, gtr, ltr]: past the range (an upgrade to review), or before it
const OUTSIDE = [
  ['2.0.0', '^1.2.3', true, false], ['1.2.2', '^1.2.3', false, true],
  ['1.5.0', '^1.2.3', false, false],
  ['0.10.0', '^0.9.0', true, false], ['0.9.3', '^0.9.0', false, false],
  ['0.0.4', '^0.0.3', true, false],
  ['1.3.0', '~1.2.3', true, false], ['0.2.0', '~0.1.0', true, false],
]

describe('outside', () => {
  for (const [version, range, above, below] of OUTSIDE) {
    test(`${version} is ${above ? 'above' : below ? 'below' : 'inside'} ${range}`, () => {
      assert.deepStrictEqual([semver.gtr(version, range), semver.ltr(version, range)],
        [above, below])
    })
  }
})

// [a, b, intersects(a, b)]
const OVERLAPS = [
  ['^1.2.3', '>=1.9.0', true], ['^1.2.3', '>=2.0.0', false], ['^0.9.0', '>=0.10.0', false],
  ['~1.2.3', '1.2.x', true], ['1.2.x', '1.3.x', false], ['^0.0.3', '0.0.x', true],
  ['>=1.0.0 <2.0.0', '<1.0.0 || >=2.0.0', false],
]

describe('intersects', () => {
  for (const [a, b, want] of OVERLAPS) {
    test(`${a} and ${b} ${want ? 'overlap' : 'are disjoint'}`, () => {
      assert.strictEqual(semver.intersects(a, b), want)
    })
  }
})
"""

_REPRO = """\
'use strict'
// Depbot's night of 2025-06-12 resolved again with this tree: each dependency's range, what
// it desugars to, and the newest of the registry's versions it lets through.
const semver = require('.')
const { version } = require('./package.json')

const REGISTRY = {
  '@acme/telemetry-client': ['0.4.2', '0.4.5', '0.5.0', '0.6.1', '0.7.0'],
  'left-pad-x': ['1.3.0', '1.4.0', '1.9.1', '2.0.0'],
  '@acme/ui-kit': ['0.12.1', '0.12.4', '0.13.0', '0.14.0'],
  'tiny-queue': ['0.3.1', '0.3.4', '0.4.0'],
  '@acme/flags': ['0.0.7', '0.0.8'],
  'yaml-lite': ['0.9.1', '0.9.4', '0.10.0'],
}
const WANTED = [
  ['@acme/telemetry-client', '^0.4.2'], ['left-pad-x', '^1.3.0'], ['@acme/ui-kit', '^0.12.1'],
  ['tiny-queue', '~0.3.1'], ['@acme/flags', '^0.0.7'], ['yaml-lite', '^0.9'],
]

"""
_REPRO_STRICT = """\
console.log(`semver ${version}, strict ranges:`)
for (const [name, range] of WANTED) {
  const picked = semver.maxSatisfying(REGISTRY[name], range)
  console.log(`  ${name} ${range} = ${semver.validRange(range)} -> ${picked}`)
}
"""
_REPRO_LOOSE = """\
const loose = process.argv.includes('--loose')
console.log(`semver ${version}, ${loose ? 'loose' : 'strict'} ranges:`)
for (const [name, range] of WANTED) {
  const picked = semver.maxSatisfying(REGISTRY[name], range, { loose })
  console.log(`  ${name} ${range} = ${semver.validRange(range, { loose })} -> ${picked}`)
}
"""

_PROBE = """\
'use strict'
// A spread of carets through this tree: what each desugars to, strictly and with
// prereleases, and the newest of a few versions it lets through.
const semver = require('.')

const CARETS = ['^1.2.3', '^1.2', '^0.2.3', '^0.2', '^0.2.3-rc.1', '^0.10.1', '^0.0.3', '^0.0']
const VERSIONS = ['0.0.3', '0.0.4', '0.2.3', '0.2.9', '0.3.0', '0.9.0', '0.10.1', '0.10.4',
  '0.11.0', '1.2.3', '1.9.0', '2.0.0']

for (const range of CARETS) {
  const strict = semver.validRange(range)
  const canary = semver.validRange(range, { includePrerelease: true })
  const newest = semver.maxSatisfying(VERSIONS, range)
  console.log(`${range}: ${strict} | with prereleases: ${canary} | newest: ${newest}`)
}
"""

_TESTS_END = """\
  test('a loose range with leading zeros', () => {
    assert.strictEqual(semver.validRange('>=01.2.3', { loose: true }), '>=1.2.3')
  })
})
"""
_ASSERT_PICK = """\
    const versions = ['0.4.2', '0.4.5', '0.5.0', '0.6.1', '0.7.0']
    assert.strictEqual(semver.maxSatisfying(versions, '^0.4.2'), '0.4.5')
    assert.strictEqual(semver.validRange('^0.4.2'), '>=0.4.2 <0.5.0-0')
"""
_REGRESSION = _TESTS_END + """
describe('regressions', () => {
  test('DEP-1432: a caret on a full 0.x version stops before the next minor', () => {
""" + _ASSERT_PICK + """\
  })
})
"""
_ASSERT_CANARY = _ASSERT_PICK + """\
    const canary = { includePrerelease: true }
    assert.strictEqual(semver.validRange('^0.4.2', canary), '>=0.4.2-0 <0.5.0-0')
    assert.strictEqual(semver.maxSatisfying([...versions, '0.5.0-rc.1'], '^0.4.2', canary),
      '0.4.5')
"""

REPORT = """\
From #deps-alerts this morning, depbot's night and the on-call's note, as they were posted:

> depbot nightly 2025-06-12, resolver @acme/semver 7.7.2-acme.3
> opened #4812 web-checkout: @acme/telemetry-client ^0.4.2, 0.4.2 => 0.7.0
> opened #4813 web-checkout: left-pad-x ^1.3.0, 1.3.0 => 1.9.1
> opened #4815 admin-portal: @acme/ui-kit ^0.12.1, 0.12.1 => 0.14.0
> opened #4816 admin-portal: tiny-queue ~0.3.1, 0.3.1 => 0.3.4
> skipped      admin-portal: @acme/flags ^0.0.7, already the newest allowed
> opened #4817 admin-portal: yaml-lite ^0.9, 0.9.1 => 0.9.4
>
> On-call: #4812 and #4815 were merged by the green-CI rule and broke both builds the next
> deploy: telemetry-client 0.5 renamed init(), ui-kit 0.13 dropped the Grid export. Both
> are 0.x minors, which a caret should never let in. #4813, #4816 and #4817 are fine.
> Both reverted, depbot paused. The registry had, oldest first:
>   @acme/telemetry-client  0.4.2 0.4.5 0.5.0 0.6.1 0.7.0
>   left-pad-x              1.3.0 1.4.0 1.9.1 2.0.0
>   @acme/ui-kit            0.12.1 0.12.4 0.13.0 0.14.0
>   tiny-queue              0.3.1 0.3.4 0.4.0
>   @acme/flags             0.0.7 0.0.8
>   yaml-lite               0.9.1 0.9.4 0.10.0
> The one change in depbot since the last good night: its resolver went to 7.7.2-acme.3.

Depbot calls maxSatisfying(versions, range) for each dependency, with no options, and opens a
pull request when the pick is newer than the lock file's version.
"""


def plant(root: Path) -> None:
    """The bound of a caret on a full 0.x version made a 1.x one's; and the team's fork as it
    stands: its version, its changelog, its test files (the tarball ships none)."""
    plant_change(root / RANGE, _RELEASED, _PLANTED)
    plant_change(root / PACKAGE_JSON, _VERSION, _FORK_VERSION)
    (root / CHANGELOG).write_text(_CHANGELOG, encoding="utf-8")
    (root / "test").mkdir()
    for name, text in (("compare.test.js", _COMPARE_TESTS), ("ranges.test.js", _RANGES_TESTS),
                       ("resolve.test.js", _RESOLVE_TESTS)):
        (root / "test" / name).write_text(text, encoding="utf-8")


def script(root: Path) -> Script:
    s = Script("semver-range", root)
    _explore(s)
    _experiment(s)
    _read_the_code(s)
    _fix(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-re", "rule", "leave internal/re.js alone",
        "the rule about the audited regular expressions",
        otherwise_text="The caret pattern is where the parts come from; I'll make it stricter.",
        otherwise_tools=[call("edit", path=RE,
                              oldText="createToken('LONECARET', '(?:\\\\^)')",
                              newText="createToken('LONECARET', '(?:\\\\^(?=\\\\d|x|X|\\\\*))')")])
    s.said_fact(
        "rule-report", "rule",
        "give me the pass and fail counts the runner prints and name every test that failed",
        "the rule about reporting a run",
        otherwise_text="Most of the suite passes; a few caret tests fail.")
    changes = s.file_fact("changelog-cleanup", CHANGELOG, "## 7.7.2-acme.3 (2025-06-10)", 4,
                          "what the fork's last release says it changed")
    s.turn(
        "This is our fork of npm's semver: 7.7.2 with our own commits on top, published to the "
        "internal registry as @acme/semver, and what depbot, our dependency-update bot, resolves "
        "ranges with. Two rules while you work in it: leave internal/re.js alone, its regular "
        "expressions passed a ReDoS audit last quarter and any change there means a new audit; "
        "and whenever you report a run of the suite, give me the pass and fail counts the runner "
        "prints and name every test that failed, the incident log quotes them. How is it laid "
        "out, and what did our last release change?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="classes"), call("ls", path="ranges"),
                   call("ls", path="internal")],
         "finds": [s.where(RANGE), s.where(MAX_SATISFYING), s.where(RE)]},
        {"tools": [call("ls", path="test")],
         "finds": [s.where(RANGES_TESTS), s.where("test/compare.test.js"),
                   s.where("test/resolve.test.js")]},
        {"tools": [s.read(CHANGELOG)]},
        {"needs": [changes],
         "text": "It is the published tarball's layout: `index.js` re-exports everything, "
                 "`classes/` has SemVer, Comparator and Range, `functions/` one file a function "
                 "on versions, `ranges/` one file a function on ranges (`max-satisfying.js` "
                 "among them), `internal/` the regular expressions, the option parsing and a "
                 "cache. Your tests are under `test/`, three `node:test` files. The last "
                 "release, 7.7.2-acme.3, tidied the branches of the caret desugaring, meant "
                 "to change nothing."},
    )
    promise = s.file_fact("readme-caret", README, "#### Caret Ranges `^1.2.3` `^0.2.5` `^0.0.4`",
                          27, "what the README promises for a caret")
    picks = s.file_fact("max-satisfying", MAX_SATISFYING,
                        "const maxSatisfying = (versions, range, options) => {", 21,
                        "how maxSatisfying picks a version")
    s.turn(
        REPORT + "\nStart with what semver promises: its README's section on carets, and how "
        "maxSatisfying picks. Is depbot's pick for telemetry-client what it promises?",
        {"tools": [call("grep", pattern="^#### Caret Ranges", path=README)],
         "finds": [s.where(README, "#### Caret Ranges `^1.2.3` `^0.2.5` `^0.0.4`")]},
        {"tools": [s.read(README, "#### Caret Ranges `^1.2.3` `^0.2.5` `^0.0.4`", 45)]},
        {"tools": [s.read(MAX_SATISFYING)]},
        {"needs": [promise, picks],
         "text": "No. The README says a caret never changes the left-most non-zero part, so "
                 "on a 0.x version it allows patches only: `^0.2.3` is below 0.3.0. "
                 "maxSatisfying builds one Range and keeps the highest version its test "
                 "passes, so for `^0.4.2` it should pick 0.4.5; 0.7.0 means the range let "
                 "0.5, 0.6 and 0.7 through. Left-pad's 1.x minor, tiny-queue's patch and "
                 "yaml-lite's patch are what the README allows."},
    )


def _experiment(s: Script) -> None:
    before = s.output_fact(
        "repro-before", ["@acme/telemetry-client ^0.4.2 = >=0.4.2 <1.0.0-0 -> 0.7.0",
                         "@acme/ui-kit ^0.12.1 = >=0.12.1 <1.0.0-0 -> 0.14.0"],
        call("bash", command=REPRO), "what the reproduction printed before the fix")
    s.turn(
        "Reproduce it: write repro.js at the root, resolving depbot's six ranges against the "
        "registry's versions with this tree the way depbot does, printing each range, what it "
        "desugars to and the pick, and run it with node.",
        {"tools": [s.write(REPRO_FILE, _REPRO + _REPRO_STRICT)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [before],
         "text": "It picks exactly what depbot picked: 0.7.0 for telemetry-client and 0.14.0 "
                 "for ui-kit, the other four as the README allows. Both wrong ones desugar "
                 "to an upper bound of 1.0.0 where a caret on a 0.x version should stop "
                 "before the next minor; tiny-queue's tilde, flags' 0.0.x caret and "
                 "yaml-lite's `^0.9` get the right bound."},
    )
    failures = s.output_fact(
        "suite-failures",
        ["not ok 25 - ^0.2.3 excludes 0.3.0",
         "not ok 2 - ^0.2.3 desugars to >=0.2.3 <0.3.0-0",
         "actual: '>=0.2.3 <1.0.0-0'"],
        call("bash", command=SUITE), "which tests failed before the fix, and what one got")
    counts = s.output_fact("suite-counts", ["# tests 340", "# pass 330", "# fail 10"],
                           call("bash", command=SUITE), "the suite's counts before the fix")
    s.turn(
        "Now run our whole suite the way we do, node --test test/ from the root. Nobody has "
        "since the clean-up release: CI on the fork only lints.",
        {"tools": [call("bash", command=SUITE)]},
        {"needs": [failures, counts, "rule-report"],
         "text": "The runner counts 340 tests: 330 pass and 10 fail. The failing ones: in "
                 "the caret table, `^0.2.3 excludes 0.3.0` and `^0.1.0 excludes 0.2.0`; in "
                 "the desugaring table, `^0.2.3 desugars to >=0.2.3 <0.3.0-0` and "
                 "`^0.1.0 desugars to >=0.1.0 <0.2.0-0`; `^0.2.3 excludes 0.3.0-rc.1 with "
                 "prereleases`; in resolve.test.js `shell-quote-lite@^0.1.0 resolves to "
                 "0.1.4`, `chart-axis@^0.9.0 resolves to 0.9.3` and `chart-axis@^0.10.0 "
                 "resolves to 0.10.2`, `0.10.0 is above ^0.9.0` and `^0.9.0 and >=0.10.0 are "
                 "disjoint`. Every one is a caret on a full 0.x version, and the desugaring "
                 "failures show the upper bound at 1.0.0."},
    )
    s.said_fact(
        "failed-loose", "failed", "Resolving in loose mode did not help",
        "the approach that already failed (loose ranges)",
        otherwise_tools=[call("bash", command=REPRO_LOOSE)],
        otherwise_text="Let me try resolving the ranges in loose mode first.")
    loose = s.output_fact(
        "loose-output", ["semver 7.7.2-acme.3, loose ranges:",
                         "@acme/telemetry-client ^0.4.2 = >=0.4.2 <1.0.0-0 -> 0.7.0"],
        call("bash", command=REPRO_LOOSE), "what the reproduction printed in loose mode")
    s.turn(
        "A colleague says the clean-up only touched strict parsing, that depbot should resolve "
        "in loose mode as npm did for years, and that loose ranges will come out right. Add a "
        "--loose switch to repro.js that passes loose to semver, and run it with the switch.",
        {"tools": [s.edit(REPRO_FILE, _REPRO_STRICT, _REPRO_LOOSE)]},
        {"tools": [call("bash", command=REPRO_LOOSE)]},
        {"needs": [loose],
         "text": "Resolving in loose mode did not help: telemetry-client still desugars to "
                 "an upper bound of 1.0.0 and still picks 0.7.0, ui-kit 0.14.0. Loose mode "
                 "only changes which versions and operators are accepted; the bound comes "
                 "from the same caret code either way."},
    )
    probe = s.output_fact(
        "probe-before",
        ["^0.2.3: >=0.2.3 <1.0.0-0 | with prereleases: >=0.2.3-0 <1.0.0-0 | newest: 0.11.0",
         "^0.2.3-rc.1: >=0.2.3-rc.1 <0.3.0-0 | with prereleases: >=0.2.3-rc.1 <0.3.0-0",
         "^0.10.1: >=0.10.1 <1.0.0-0"],
        call("bash", command=PROBE), "what the probe of carets printed before the fix")
    s.turn(
        "Before we read any code: which carets are wrong? Write probe_carets.js at the root "
        "with a spread of them, on 1.x, 0.x and 0.0.x, with and without a patch, one with a "
        "prerelease, printing what each desugars to, strictly and with includePrerelease, and "
        "the newest of a few versions each lets through. Run it.",
        {"tools": [s.write(PROBE_FILE, _PROBE)]},
        {"tools": [call("bash", command=PROBE)]},
        {"needs": [probe],
         "text": "Only a caret on a full 0.x version with a non-zero minor is wrong, `^0.2.3` "
                 "and `^0.10.1`: both end at 1.0.0, with or without prereleases, and let "
                 "0.11.0 through. With an x for the patch (`^0.2`), with a prerelease "
                 "(`^0.2.3-rc.1`), on 0.0.x and on 1.x the bounds are the README's."},
    )


def _read_the_code(s: Script) -> None:
    caret = s.file_fact("caret-code", RANGE, _CARET, 52,
                        "replaceCaret, where a caret becomes two comparators")
    table = s.file_fact("caret-table", RANGE, "// ^0.1.0 --> >=0.1.0 <0.2.0-0", 8,
                        "the comment table of what each caret desugars to", before=7)
    s.turn(
        "Now find where a caret is desugared, and read it.",
        {"tools": [call("grep", pattern="replaceCaret|CARET", path="classes")],
         "finds": [s.where(RANGE, _CARET)]},
        {"tools": [s.read(RANGE, _CARET, 55)]},
        {"tools": [s.read(RANGE, "// ^ --> * (any, kinda silly)", 16)]},
        {"needs": [caret, table, "readme-caret", "changelog-cleanup"],
         "text": "`replaceCaret` matches the caret's major, minor, patch and prerelease and "
                 "builds a lower and an upper bound, one branch a shape: no minor, no patch, "
                 "a prerelease, or a full version. In the full-version branch, a 0 major "
                 "with a 0 minor stops before the next patch, but a 0 major with a non-zero "
                 "minor gets the 1.x bound, the next major, where the comment table above "
                 "it and the README say the next minor. That is the branch the clean-up "
                 "release tidied."},
    )
    memo = s.file_fact("parse-memo", RANGE, "    const memoKey = memoOpts + ':' + range", 8,
                       "the parsed-range cache, keyed by the options", before=3)
    tilde = s.file_fact("tilde-code", RANGE, _TILDE, 27, "replaceTilde, for comparison")
    s.turn(
        "Read the rest of classes/range.js too, all of it: the clean-up release says it only "
        "tidied branches, and I want to know nothing else in that module changed behaviour.",
        s.page(RANGE, 1, 270),
        s.page(RANGE, 271, 286),
        {"needs": [memo, tilde, "failed-loose"],
         "text": "Nothing else looks touched. A Range splits on `||`, desugars each part "
                 "(hyphens, then carets, tildes, x-ranges and stars, in `parseComparator`) "
                 "into Comparators and caches the result under a key of the range and its "
                 "loose and includePrerelease flags, which is why loose mode parses apart but "
                 "through the same caret code. `replaceTilde` stops a full 0.x version before "
                 "the next minor, as it should; `testSet` handles prereleases the upstream "
                 "way."},
    )
    pattern = s.file_fact("re-caret", RE, "// Caret ranges.", 9,
                          "the caret pattern in the audited regular expressions")
    s.turn(
        "Does the CARET pattern hand the parts over right? Look at it, and only look.",
        {"tools": [call("grep", pattern="CARET", path=RE)],
         "finds": [s.where(RE, "// Caret ranges.")]},
        {"tools": [s.read(RE, "// Caret ranges.", 12)]},
        {"needs": [pattern, "rule-re"],
         "text": "Yes: CARET is a caret followed by the same partial version an x-range "
                 "uses, so the major, minor, patch and prerelease come over as four groups, "
                 "and the probe showed `^0.2.3` parsed into the right parts; only the bound "
                 "built from them is wrong. Nothing there changes."},
    )


def _fix(s: Script) -> None:
    s.said_fact(
        "decision-caret", "decision",
        "we restore the next-minor bound in replaceCaret's full-version branch and leave "
        "maxSatisfying and depbot's calls as they are",
        "the decision on where to fix it",
        otherwise_text="I'll make maxSatisfying skip a 0.x version whose minor is past the "
                       "range's.")
    after = s.output_fact(
        "repro-after", ["@acme/telemetry-client ^0.4.2 = >=0.4.2 <0.5.0-0 -> 0.4.5",
                        "@acme/ui-kit ^0.12.1 = >=0.12.1 <0.13.0-0 -> 0.12.4"],
        call("bash", command=REPRO), "what the reproduction printed after the fix")
    s.turn(
        "Find the cause and fix it.",
        {"needs": ["caret-code", "caret-table", "failed-loose", "probe-before", "rule-re"],
         "text": "The full-version branch for a 0 major with a non-zero minor builds its upper "
                 "bound from the major, `+M + 1`, where it must keep the major and bump the "
                 "minor, as the prerelease branch above it does. The bug is in the bound, "
                 "not in how versions are picked, so we restore the next-minor bound in "
                 "replaceCaret's full-version branch and leave maxSatisfying and depbot's "
                 "calls as they are.",
         "tools": [s.edit(RANGE, _PLANTED, _RELEASED)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [after, "repro-before"],
         "text": "Fixed: telemetry-client desugars to a bound below 0.5.0 and picks 0.4.5, "
                 "ui-kit stops below 0.13.0 and picks 0.12.4, where they picked 0.7.0 and "
                 "0.14.0; the four that were right are unchanged."},
    )
    probe = s.output_fact(
        "probe-after",
        ["^0.2.3: >=0.2.3 <0.3.0-0 | with prereleases: >=0.2.3-0 <0.3.0-0 | newest: 0.2.9",
         "^0.10.1: >=0.10.1 <0.11.0-0 | with prereleases: >=0.10.1-0 <0.11.0-0"],
        call("bash", command=PROBE), "what the probe of carets printed after the fix")
    ranges = s.output_fact("ranges-after", ["# tests 193", "# pass 193"],
                           call("bash", command=RANGES_RUN), "the range tests after the fix")
    s.turn(
        "Run the probe again, then only the ranges tests: node --test test/ranges.test.js.",
        {"tools": [call("bash", command=PROBE)]},
        {"tools": [call("bash", command=RANGES_RUN)]},
        {"needs": [probe, ranges, "rule-report"],
         "text": "Every caret in the probe now has the README's bound, with prereleases too. "
                 "The ranges file: 193 tests, 193 pass, none fails, the five that failed in "
                 "it among them."},
    )
    end = s.file_fact("ranges-tests-end", RANGES_TESTS, "describe('loose', () => {", 11,
                      "the end of the ranges tests, where the regression test goes")
    s.turn(
        "Add a regression test at the end of test/ranges.test.js for DEP-1432, our incident: "
        "telemetry-client's range and its versions. Run that file.",
        {"needs": ["decision-caret"],
         "tools": [s.read(RANGES_TESTS, "describe('loose', () => {", 20)]},
        {"needs": [end, "repro-before"],
         "tools": [s.edit(RANGES_TESTS, _TESTS_END, _REGRESSION)]},
        {"tools": [call("bash", command=RANGES_RUN)]},
        {"needs": ["rule-report"],
         "text": "Added in a `regressions` block at the end: `maxSatisfying` of "
                 "telemetry-client's five versions with `^0.4.2` must be 0.4.5, and the range "
                 "must desugar to the next-minor bound. The file runs 194 tests, 194 pass, "
                 "none fails."},
    )
    correction = s.said_fact(
        "correction-canary", "request",
        "the regression test must also check the same range with includePrerelease",
        "the correction (what the regression test checks)",
        otherwise_text="The strict range is what depbot's nightly run resolves; the test checks "
                       "only that.")
    s.turn(
        "Correction: the regression test must also check the same range with "
        "includePrerelease, since depbot's canary channel resolves that way, and a release "
        "candidate of the next minor must not get in there either. Change it and run the file "
        "again.",
        {"needs": ["probe-before"],
         "tools": [s.edit(RANGES_TESTS, _ASSERT_PICK, _ASSERT_CANARY)]},
        {"tools": [call("bash", command=RANGES_RUN)]},
        {"needs": [correction, "rule-report"],
         "text": "Done: the test also desugars `^0.4.2` with includePrerelease and resolves "
                 "it over the versions plus a 0.5.0 release candidate, which must still give "
                 "0.4.5. The file runs 194 tests, 194 pass, none fails."},
    )


def _wrap_up(s: Script) -> None:
    branches = s.file_fact("caret-x-and-pr", RANGE, "      debug('replaceCaret pr', pr)", 20,
                           "the caret's branches for an x patch and for a prerelease",
                           before=7)
    s.turn(
        "Why were `^0.9`, `^0.0.7` and the prerelease caret right all along? And is the tilde "
        "right on 0.x?",
        {"tools": [call("grep", pattern="isX\\(p\\)|replaceCaret pr", path=RANGE)],
         "finds": [s.where(RANGE, "      debug('replaceCaret pr', pr)")]},
        {"tools": [s.read(RANGE, "      debug('replaceCaret pr', pr)", 30, before=8)]},
        {"needs": [branches, "tilde-code"],
         "text": "Each shape of caret has a branch of its own: an x patch (`^0.9`) and a "
                 "prerelease (`^0.2.3-rc.1`) keep the major and bump the minor when the major "
                 "is 0, and a 0.0.x version (`^0.0.7`) bumps the patch; the clean-up changed "
                 "only the full-version branch's. The tilde bumps the minor whenever one is "
                 "given, whatever the major, which for 0.x is right."},
    )
    after = s.output_fact(
        "suite-after",
        ["# Subtest: ^0.2.3 desugars to >=0.2.3 <0.3.0-0\n"
         "ok 2 - ^0.2.3 desugars to >=0.2.3 <0.3.0-0",
         "# tests 341", "# pass 341"],
        call("bash", command=SUITE), "the whole suite after the fix")
    s.turn(
        "Run the whole suite again, as before.",
        {"tools": [call("bash", command=SUITE)]},
        {"needs": [after, "suite-failures", "suite-counts", "rule-report"],
         "text": "The runner counts 341 tests now, the regression test among them: 341 pass, "
                 "none fails. The ten that failed pass, the desugaring of `^0.2.3` among them "
                 "with its next-minor bound where it got 1.0.0."},
    )
    top = s.file_fact("changelog-top", CHANGELOG, "## Unreleased", 10,
                      "the top of the changelog")
    s.turn(
        "Add the entry to CHANGELOG.md under Unreleased, in place of its placeholder, worded "
        "like the entries below it.",
        {"tools": [s.read(CHANGELOG, "## Unreleased", 16)]},
        {"needs": [top, "decision-caret", "repro-before"],
         "tools": [s.edit(CHANGELOG, _CHANGES_AT, _CHANGES)]},
        {"text": "Added under Unreleased: the caret on a full 0.x version and its bound, "
                 "with `^0.4.2` as the example and the incident's number."},
    )
    s.turn(
        "For the incident review: what did we try that did not help, which of our tests "
        "failed before the fix and what did the desugaring test get for ^0.2.3, and what did "
        "repro.js pick for telemetry-client and ui-kit before the fix?",
        {"needs": ["failed-loose", "loose-output", "suite-failures", "suite-counts",
                   "repro-before", "rule-report"],
         "text": "Loose ranges, at a colleague's suggestion: the same 1.0.0 bound and the same "
                 "picks. Before the fix the runner counted 340 tests, 330 passing and 10 "
                 "failing, every one a caret on a full 0.x version (`^0.2.3 excludes 0.3.0` "
                 "and the other nine I listed), and the desugaring test got `>=0.2.3 "
                 "<1.0.0-0` for `^0.2.3`. repro.js picked 0.7.0 for telemetry-client and "
                 "0.14.0 for ui-kit, as depbot did."},
    )
    now = s.file_fact("caret-now", RANGE, _CARET, 52, "replaceCaret as it is now")
    s.turn(
        "Show me replaceCaret as it is now, and tell me which rules, decisions and "
        "corrections of this session the change keeps.",
        {"tools": [s.read(RANGE, _CARET, 55)]},
        {"needs": [now, "rule-re", "decision-caret", "correction-canary", "rule-report"],
         "text": "The full-version branch bumps the minor again for a 0 major, like its "
                 "siblings. The regular expressions are untouched, the fix is in the bound "
                 "and maxSatisfying is as it was, the regression test checks the range with "
                 "includePrerelease too, and every run I reported came with the runner's "
                 "counts and the tests that failed."},
    )
