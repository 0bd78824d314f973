"""What a tenant viewer may read of OTHER tenants, and how it is hidden: the one rule. PURE.

A tenant viewer learns that their GPU is shared, by which mode, with which trust class, how many
replicas the others hold and that a reset happened, but never who the others are: no other
tenant's slug or name, namespace, object in such a namespace, or principal. Each is replaced by
a neutral token wherever it stands: a field of its own (a finding's subject, a reset's tenants),
a value or key anywhere in structured evidence, a word of free text (a title, a sync warning, a
note someone typed). In a record that says it is another tenant's (its `tenant`), its container
images are hidden too (THEIR_RECORD_NAMES). A tenant's display name may be several words ("Beta
Corp"): text is also scanned for names as whole phrases, longest first, and the viewer's own
tenants' names are kept whole ("Beta Corp Labs", theirs, is not half-hidden by "Beta Corp"). A
name of several words is matched in any case and spacing ("beta  corp" in a typed reason is still
them); a name of one word only with the capitalisation the tenant gave it, because a one-word
name is a word of prose too (a tenant named "Research" must not hide every "research" a check's
rationale says; tenants.name_phrases). The slug is matched as a word, exactly (slugs are lower
case); a name that only contains it ("beta-testers") is another word.

`HiddenScope` holds the names as sets, built once per request (inventory.presenter), so
hiding costs O(1) per name looked at and one C-speed scan per string: what a row costs does
not grow with the number of tenants. Models declare which of their fields may name another
tenant and how (`redacted_fields`, see `Field`); inventory.presenter applies the declaration
to model instances, value rows and serializers alike.

The same scope hides the bulletins a viewer may not read (TLP other than CLEAR/WHITE, see
inventory.bulletins.models): their tracking ids, and the CVEs no bulletin they may read names,
are words like a tenant's name. A record of one (a node's exposure, a finding's evidence: any
mapping with an `advisory_id` they may not read) keeps what is the viewer's own (the component,
its version, the bound, the fix, severity and release date: what makes the node's patch status)
and loses what identifies the advisory (id, CVEs, CVSS, the vendor's condition text); a list
of ids or CVEs leaves the hidden ones out.`HIDDEN_ADVISORY` stands where an id stood."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import Any

from tenants.advisory_records import HIDDEN_ADVISORY, hidden_advisory_record
from tenants.cluster_scope import ClusterNamespaces
from tenants.container_names import container_names, without_names, without_words
from tenants.name_phrases import fold, phrase_scan

HIDDEN_TENANT = "(another tenant)"
HIDDEN_NAMESPACE = "(another tenant's namespace)"
HIDDEN_OBJECT = "(another tenant's object)"
HIDDEN_PRINCIPAL = "(another tenant's principal)"
# Names in a record that says it is a hidden tenant's (its `tenant`, as a workload finding's
# evidence: posture.rules.subjects.workload_draft) that no word of the scope matches: a
# container image names the tenant's registry, project or model ("docker.io/betacorp/infer").
# A neighbour reading the owner's finding (posture.rules.pod.neighbours) sees it is hidden; so is
# a container's name, which the tenant chose ("nsys-profile" says what it runs), also in the
# record's title (their_containers).
THEIR_RECORD_NAMES = frozenset({"image", "container"})
# A word of text that may be a name: DNS labels and subdomains, emails, with the separators
# that join a namespace to an object ("ns/name", "system:serviceaccount:ns:name") kept
# inside the chain so the object's name is hidden together with its namespace.
_NAME = r"[\w@-]+(?:\.[\w@-]+)*"  # dots inside a name, not one ending a sentence
_WORD = re.compile(_NAME)
_CHAIN = re.compile(rf"{_NAME}(?:[/:]{_NAME})*")
_PARTS = re.compile(r"([/:])")
# One encoder, not one per call. Not ASCII-escaped: a name with an accent ("Zürich Labs") must
# read in the compact text as it does in the value, or the scan misses it.
_compact = json.JSONEncoder(default=str, ensure_ascii=False).encode


def one_name(text: str) -> bool:
    """Whether `text` reads as one name to the scan: a message naming an object as
    `namespace/name` of such names has it hidden whole where the namespace is another party's
    (inventory.sources.object_refs); one that is not would leave the rest of the name in view."""
    return _WORD.fullmatch(text) is not None


class Field(Enum):
    """How a field of a model or row may name another tenant."""

    TENANT = "tenant"  # a tenant's slug (or name)
    TENANTS = "tenants"  # a list of tenant slugs: the hidden ones are left out
    NAMESPACE = "namespace"  # a namespace; the field named `subject_name` beside it follows
    SUBJECT_NAME = "subject_name"  # an object's name, hidden with its namespace field
    OBJECTS = "objects"  # names of objects in the row's namespace: all hidden with it
    TEXT = "text"  # free text the product writes: titles, warnings, errors
    # Free text people type (reasons, notes, a justification): TEXT, and other parties' pods
    # by their bare names too (HiddenScope.typed_objects).
    TYPED = "typed"
    VALUE = "value"  # structured JSON: evidence, labels, taints, before/after


@dataclass(frozen=True)
class HiddenScope:
    """The names of the tenants a viewer may not see (slugs and display names), of their
    namespaces and of their principals ("group:x", and "x" alone)."""

    tenants: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    principals: frozenset[str] = frozenset()
    # Cluster-scoped objects that exist for a hidden tenant (a ClusterRoleBinding granting its
    # principals): their names often carry the tenant's name.
    objects: frozenset[str] = frozenset()
    # Names of other parties' pods that none of the viewer's bears: people name a pod bare
    # ("before Cedar's c3dar-score-0"), the product always with its namespace (the chain
    # hides it whole), so these are hidden as words in what people type (Field.TYPED) only: a
    # tenant's pod named "nvidia-smi" or "cuda" must not hide those words in check texts.
    typed_objects: frozenset[str] = frozenset()
    # Tracking ids of the bulletins the viewer may not read, and the CVEs only they name.
    advisories: frozenset[str] = frozenset()
    cves: frozenset[str] = frozenset()
    # Display names: of the hidden tenants (also in `tenants`, for a value that is one), and
    # of the viewer's own, kept whole where a hidden name is part of one.
    names: frozenset[str] = frozenset()
    own_names: frozenset[str] = frozenset()
    # What the namespaces are in each cluster (a label is one cluster's): `namespaces` is
    # their union, for a row of no cluster; `in_cluster` gives a row of one its own.
    clusters: ClusterNamespaces | None = field(default=None, compare=False)

    def in_cluster(self, cluster: object) -> HiddenScope:
        """The scope for a row of `cluster` (its id or name): the namespaces hidden there
        (tenants.cluster_scope). This scope where the row names no cluster the viewer may see.
        Built once per cluster: the scans are cached on it."""
        cluster_id = self.clusters.cluster_id(cluster) if self.clusters is not None else None
        if cluster_id is None:
            return self
        scopes = self._in_clusters
        if cluster_id not in scopes:
            namespaces = self.clusters.hidden(cluster_id)
            scopes[cluster_id] = replace(self, namespaces=namespaces, clusters=None)
        return scopes[cluster_id]

    @cached_property
    def _in_clusters(self) -> dict[int, HiddenScope]:
        return {}

    @cached_property
    def _typed(self) -> HiddenScope:
        """This scope hiding `typed_objects` as words too: what people type is read by it."""
        if not self.typed_objects:
            return self
        return replace(self, objects=self.objects | self.typed_objects, typed_objects=frozenset())

    @cached_property
    def _by_first_words(self) -> dict[tuple[str, ...], frozenset[str]]:
        """The display names (hidden and own) by their first two words (one for a name of
        one word), case folded: a text is scanned only for the names it may hold, so a string
        costs about the same with five tenants or five thousand. Empty when no name has a
        space (a name of one word is a word: the word scan finds it)."""
        if all(len(name.split()) < 2 for name in self.names | self.own_names):
            return {}
        index: dict[tuple[str, ...], set[str]] = {}
        for name in self.names | self.own_names:
            key = tuple(w.casefold() for w in _WORD.findall(name)[:2])
            if key:
                index.setdefault(key, set()).add(name)
        return {key: frozenset(names) for key, names in index.items()}

    def _phrases(self, words: list[str]) -> re.Pattern[str] | None:
        """The scan for the names `words` (a text's, in order) may hold, or None when none is
        a hidden one."""
        index = self._by_first_words
        if not index:
            return None
        folded = [w.casefold() for w in words]
        names: set[str] = set()
        for i, word in enumerate(folded):
            names.update(index.get((word,), ()))
            names.update(index.get((word, folded[i + 1]) if i + 1 < len(folded) else (), ()))
        if self.names.isdisjoint(names):
            return None
        return phrase_scan(frozenset(names))

    @cached_property
    def _own_folded(self) -> frozenset[str]:
        return frozenset(map(fold, self.own_names))

    def _hidden_phrase(self, phrase: str) -> bool:
        """Whether a phrase the name scan found is a hidden tenant's name, not the viewer's
        own. Fail closed: one that is both (two tenants named alike) is hidden."""
        return " ".join(phrase.split()) in self.names or fold(phrase) not in self._own_folded

    def _names_phrase(self, text: str, words: list[str]) -> bool:
        scan = self._phrases(words)
        return scan is not None and any(
            self._hidden_phrase(m.group(0)) for m in scan.finditer(text)
        )

    @cached_property
    def _words(self) -> frozenset[str]:
        """Every name a word of text is checked against, in one set: one lookup per word."""
        return (
            self.tenants
            | self.namespaces
            | self.principals
            | self.objects
            | self.advisories
            | self.cves
        )

    @cached_property
    def _folded(self) -> frozenset[str]:
        """Hidden tracking ids and CVEs in upper case: an id is the same id in any case
        ("cve-2024-0132" in a note someone typed names CVE-2024-0132)."""
        return frozenset(name.upper() for name in self.advisories | self.cves)

    @cached_property
    def _chained_ids(self) -> frozenset[str]:
        """Hidden tracking ids that are not one word of text ("RHSA-2024:1234"), upper case:
        text is checked for them as chains."""
        return frozenset(a.upper() for a in self.advisories if _WORD.fullmatch(a) is None)

    @property
    def empty(self) -> bool:
        # A name no tenant claims in one cluster may be claimed in another: not in the union.
        return not self._words and (self.clusters is None or not self.clusters.hides_any)

    def names_any(self, text: str) -> bool:
        """Whether `text` holds a hidden name as a word (one C-speed scan, one set test)."""
        words = _WORD.findall(text)
        if not self._words.isdisjoint(words) or self._names_phrase(text, words):
            return True
        if self._folded and not self._folded.isdisjoint(map(str.upper, words)):
            return True
        return bool(self._chained_ids) and not self._chained_ids.isdisjoint(
            map(str.upper, _CHAIN.findall(text))
        )

    def hides_advisory(self, word: object) -> bool:
        return isinstance(word, str) and bool(self._folded) and word.upper() in self._folded

    def word(self, word: str) -> str | None:
        """The token hiding `word`, or None when it names nothing hidden."""
        if word in self.tenants:
            return HIDDEN_TENANT
        if word in self.namespaces:
            return HIDDEN_NAMESPACE
        if word in self.principals:
            return HIDDEN_PRINCIPAL
        if word in self.objects:
            return HIDDEN_OBJECT
        if self._folded and word.upper() in self._folded:
            return HIDDEN_ADVISORY
        return None

    def tenant(self, slug: str | None) -> str | None:
        return HIDDEN_TENANT if slug and slug in self.tenants else slug

    def tenant_list(self, slugs: Iterable[str]) -> list[str]:
        """The slugs a viewer may see, sorted: the tenants a shared finding affects less the
        others (a viewer learns the finding is shared from its evidence, not who shares it)."""
        return sorted(s for s in slugs if s not in self.tenants)

    def text(self, text: str) -> str:
        """`text` with every hidden name replaced; the same object when none is in it."""
        if not text or not self.names_any(text):
            return text
        scan = self._phrases(_WORD.findall(text))
        if scan is None:
            return _CHAIN.sub(lambda m: self._chain(m.group(0)), text)
        # Names first, then the words between them: a token put in is not scanned again.
        out: list[str] = []
        start = 0
        for m in scan.finditer(text):
            out.append(_CHAIN.sub(lambda c: self._chain(c.group(0)), text[start : m.start()]))
            out.append(HIDDEN_TENANT if self._hidden_phrase(m.group(0)) else m.group(0))
            start = m.end()
        out.append(_CHAIN.sub(lambda c: self._chain(c.group(0)), text[start:]))
        return "".join(out)

    def _chain(self, chain: str) -> str:
        if self._chained_ids and chain.upper() in self._chained_ids:
            return HIDDEN_ADVISORY
        parts = _PARTS.split(chain)  # words at even indexes, separators between them
        out: list[str] = []
        i = 0
        while i < len(parts):
            part = parts[i]
            if part in self.namespaces and i + 2 < len(parts):
                out.append(HIDDEN_OBJECT)  # "ns/name", "ns:name": the object, not its name
                i += 3
                continue
            out.append((self.word(part) or part) if i % 2 == 0 else part)
            i += 1
        return "".join(out)

    def value(self, value: Any) -> Any:
        """Structured data (JSON) with hidden names replaced in keys, values and text; the
        same object, not a copy, when nothing in it names a hidden tenant."""
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self.word(value) or self.text(value)
        if not self.names_any(_compact(value)):
            return value
        return self._walk(value)

    def _walk(self, value: Any, theirs: bool = False) -> Any:
        """`theirs`: inside a record of a hidden tenant's (THEIR_RECORD_NAMES)."""
        if isinstance(value, str):
            return self.word(value) or self.text(value)
        if isinstance(value, Mapping):
            if self.hides_advisory(value.get("advisory_id")):
                value = self.advisory_record(value)
            owner = value.get("tenant")
            theirs = theirs or (isinstance(owner, str) and owner in self.tenants)
            out: dict[str, Any] = {}
            for key, item in value.items():
                hidden = theirs and key in THEIR_RECORD_NAMES and item
                out[_unique(out, self._walk(key) if isinstance(key, str) else key)] = (
                    HIDDEN_OBJECT if hidden else self._walk(item, theirs)
                )
            return out
        if isinstance(value, list | tuple):
            # A list of ids or CVEs leaves the hidden ones out, as a list of tenants does.
            return [self._walk(item, theirs) for item in value if not self.hides_advisory(item)]
        return value

    def advisory_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A record of an advisory the viewer may not read (tenants.advisory_records)."""
        return hidden_advisory_record(record)

    def fields(self, row: MutableMapping[str, Any], declared: Mapping[str, Field]) -> None:
        """Hide, in place, what the `declared` fields of `row` name (a dict or a mapping
        view of an object, see inventory.presenter)."""
        hidden_namespace = False
        containers = self.their_containers(row.get("evidence") if "evidence" in declared else None)
        for name, kind in declared.items():
            if kind is Field.NAMESPACE and row.get(name) in self.namespaces:
                row[name], hidden_namespace = HIDDEN_NAMESPACE, True
        for name, kind in declared.items():
            current = row.get(name)
            if kind is Field.TENANT:
                row[name] = self.tenant(current)
            elif kind is Field.SUBJECT_NAME and current in self.objects:
                row[name] = HIDDEN_OBJECT
            elif kind is Field.TENANTS and current is not None:
                row[name] = self.tenant_list(current)
            elif kind is Field.SUBJECT_NAME:
                row[name] = HIDDEN_OBJECT if hidden_namespace and current else self.text(current)
            elif kind is Field.OBJECTS and current is not None:
                row[name] = (
                    [HIDDEN_OBJECT for _ in current] if hidden_namespace else self.value(current)
                )
            elif kind is Field.TEXT and isinstance(current, str):
                row[name] = without_words(self.text(current), containers, HIDDEN_OBJECT)
            elif kind is Field.TYPED and isinstance(current, str):
                row[name] = self._typed.text(current)
            elif kind is Field.VALUE:
                row[name] = without_names(self.value(current), containers, HIDDEN_OBJECT)

    def their_containers(self, evidence: Any) -> frozenset[str]:
        """The container names of a record that says it is a hidden tenant's (its evidence's
        `tenant`): what its title and evidence name and no word of the scope matches."""
        if not isinstance(evidence, Mapping) or evidence.get("tenant") not in self.tenants:
            return frozenset()
        return frozenset(container_names(evidence))


# For readers who see every tenant the scope is None: these show them everything as stored.


def hide_text(scope: HiddenScope | None, text: str) -> str:
    return scope.text(text) if scope is not None else text


def visible_tenants(scope: HiddenScope | None, slugs: Iterable[str]) -> list[str]:
    """Sorted slugs less those `scope` hides: a tenant viewer sees only their own tenants."""
    return scope.tenant_list(slugs) if scope is not None else sorted(slugs)


def tenant_rows(scope: HiddenScope | None, tenants: Iterable[tuple[str, str]]) -> list[dict]:
    """(slug, name) pairs as rows {"slug", "name"}; each hidden tenant becomes a row named
    HIDDEN_TENANT with no slug, after the others (a viewer learns that a finding is shared,
    not with whom)."""
    rows: list[dict] = []
    hidden = 0
    for slug, name in tenants:
        if scope is not None and scope.tenant(slug) == HIDDEN_TENANT:
            hidden += 1
        else:
            rows.append({"slug": slug, "name": name})
    return rows + [{"slug": "", "name": HIDDEN_TENANT} for _ in range(hidden)]


def _unique(taken: Mapping[str, Any], key: Any) -> Any:
    """Two hidden tenants as keys of one mapping both become the token: number the second."""
    if key not in taken:
        return key
    n = 2
    while f"{key} {n}" in taken:
        n += 1
    return f"{key} {n}"
