"""Accepted findings in `reconcile validate`, as a user sees them in every format: a
comment in the spec or an entry of the Owner document accepts a warning with a
reason (and maybe a date); it is counted and listed, not a problem: no annotation in
`github`, a SARIF result with `suppressions` (the log checked against the OASIS
schema); an expired or unused acceptance is reported at its line, a malformed one is
an error at its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.plan.test_ci_reporters import valid_sarif
from tests.specs_support import cmek_snapshot

CMEK_POLICY = cmek_snapshot("acme-payments", "organizations/1001")
NO_POLICIES = "ancestry: {projects/acme-payments: organizations/1001}\n"


def topic(name: str, comment: str = "") -> str:
    line = f"  # reconcile: {comment}\n" if comment else ""
    return (
        "apiVersion: reconcile.pubsub/v1\nkind: Topic\n"
        f"metadata:\n{line}  project: acme-payments\n  name: {name}\n"
    )


def tree(tmp_path: Path, *docs: str, policy: str | None = CMEK_POLICY) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "topics.yaml").write_text("---\n".join(docs))
    if policy is not None:
        (specs / "org-policy.yaml").write_text(policy)
    return specs


def validate(run_cli: Any, tmp_path: Path, monkeypatch: Any, *args: str) -> Any:
    monkeypatch.chdir(tmp_path)
    return run_cli("validate", "specs", *args)


ACCEPT = 'accept org-cmek-required reason="keys rotate in Q3" until=2999-03-31'


def test_an_accepted_finding_is_listed_and_counted_not_a_warning(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    tree(tmp_path, topic("legacy", ACCEPT), topic("orders"))
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "specs/topics.yaml:12:9: warning[org-cmek-required]: the effective "
        "constraints/gcp.restrictNonCmekServices of project acme-payments requires a "
        "customer-managed key for pubsub.googleapis.com, so the service refuses to create "
        "topic projects/acme-payments/topics/orders without one"
    ), result.stdout
    assert lines[1].startswith(
        "specs/topics.yaml:6:9: accepted[org-cmek-required]: the effective constraints/"
    )
    assert "topic projects/acme-payments/topics/legacy without one" in lines[1]
    assert lines[1].endswith(
        "(accepted at specs/topics.yaml:4: keys rotate in Q3 (until 2999-03-31))"
    )
    assert len(lines) == 2
    assert result.stderr == "1 file checked: 0 errors, 1 warning, 1 accepted\n"


def test_json_github_and_sarif_carry_the_acceptance(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    tree(tmp_path, topic("legacy", ACCEPT), topic("orders"))
    as_json = json.loads(validate(run_cli, tmp_path, monkeypatch, "--format", "json").stdout)
    accepted = [d for d in as_json if "acceptance" in d]
    assert [d["topic"] for d in accepted] == ["projects/acme-payments/topics/legacy"]
    assert accepted[0]["severity"] == "warning"
    assert accepted[0]["acceptance"] == {
        "code": "org-cmek-required", "reason": "keys rotate in Q3", "until": "2999-03-31",
        "file": "specs/topics.yaml", "line": 4, "col": 3, "kind": "inSource",
        "first": 1, "last": 6, "topic": "projects/acme-payments/topics/legacy", "topics": [],
    }
    github = validate(run_cli, tmp_path, monkeypatch, "--format", "github")
    assert github.exit_code == 0
    annotations = github.stdout.splitlines()
    assert len(annotations) == 1, github.stdout
    assert annotations[0].startswith("::warning file=specs/topics.yaml,line=12,col=9,")
    assert "legacy" not in github.stdout
    assert github.stderr == "1 file checked: 0 errors, 1 warning, 1 accepted\n"
    sarif = valid_sarif(validate(run_cli, tmp_path, monkeypatch, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    suppressed = [r for r in results if "suppressions" in r]
    assert len(results) == 2 and len(suppressed) == 1
    assert "topics/legacy" in suppressed[0]["message"]["text"]
    assert suppressed[0]["suppressions"] == [{
        "kind": "inSource",
        "status": "accepted",
        "justification": "keys rotate in Q3 (until 2999-03-31)",
        "location": {"physicalLocation": {
            "artifactLocation": {"uri": "specs/topics.yaml"}, "region": {"startLine": 4},
        }},
    }]


OWNER = """\
apiVersion: reconcile.pubsub/v1
kind: Owner
metadata: {name: team-payments}
spec:
  acceptedFindings:
    - code: existing-cmek-required
      topics: [projects/acme-payments/topics/legacy-*]
      reason: "PAY-1234: keys rotate in Q3, approved by the security team"
      until: 2999-03-31
"""


def test_the_owner_documents_list_accepts_for_the_topics_it_names(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    tree(tmp_path, OWNER, topic("legacy-a"), topic("legacy-b"), topic("orders"))
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stderr == "1 file checked: 0 errors, 1 warning, 2 accepted\n"
    lines = result.stdout.splitlines()
    assert "topics/orders without one" in lines[0] and "warning[org-cmek-required]" in lines[0]
    assert lines[1].startswith("projects/acme-payments: accepted[org-cmek-required]: ")
    assert "each of these 2 topics" in lines[1]
    assert lines[2:] == [
        f"  specs/topics.yaml:{line}:9: projects/acme-payments/topics/{name} (accepted at "
        "specs/topics.yaml:6: PAY-1234: keys rotate in Q3, approved by the security team "
        "(until 2999-03-31))"
        for line, name in ((15, "legacy-a"), (21, "legacy-b"))
    ]
    sarif = valid_sarif(validate(run_cli, tmp_path, monkeypatch, "--format", "sarif").stdout)
    kinds = [
        s["kind"] for r in sarif["runs"][0]["results"] for s in r.get("suppressions", [])
    ]
    assert kinds == ["external", "external"]


def test_an_expired_acceptance_is_reported_and_accepts_nothing(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    tree(tmp_path, topic("legacy", 'accept org-cmek-required reason="old" until=2001-01-31'))
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "specs/topics.yaml:4:3: warning[acceptance-expired]: the acceptance of "
        "org-cmek-required for topic projects/acme-payments/topics/legacy expired after "
        "2001-01-31 (reason: old), so its findings are reported again (fix what it "
        "accepted, or write a later `until` if the reason still holds)"
    )
    assert lines[1].startswith("specs/topics.yaml:6:9: warning[org-cmek-required]: ")
    assert result.stderr == "1 file checked: 0 errors, 2 warnings\n"


def test_an_unused_acceptance_is_reported_where_validate_could_see_its_finding(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    tree(tmp_path, topic("orders", ACCEPT), policy=NO_POLICIES)
    result = validate(run_cli, tmp_path, monkeypatch, "--format", "github")
    assert result.stdout == (
        "::warning file=specs/topics.yaml,line=4,col=3,title=reconcile acceptance-unused::"
        "the acceptance of org-cmek-required for topic projects/acme-payments/topics/orders "
        "accepts no finding: there is none to accept (remove it if what it was written for "
        "is fixed, or correct its code or topics)\n"
    )
    # Without a snapshot the org-policy checks do not run: nothing says it is unused.
    (tmp_path / "specs" / "org-policy.yaml").unlink()
    quiet = validate(run_cli, tmp_path, monkeypatch)
    assert "acceptance-unused" not in quiet.output
    assert "org-policy-missing" in quiet.stdout


def test_malformed_acceptances_are_errors_at_their_lines(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    owner = OWNER.replace('      until: 2999-03-31\n', '      until: 2027-02-30\n') + (
        "    - code: org-cmek-required\n"
        "      reason: '  '\n"
        "    - code: region-restricted\n"
        "      topics: [acme-payments/legacy]\n"
        "      reason: ok\n"
        "    - code: org-cmek-required\n"
    )
    tree(
        tmp_path, owner,
        topic("t-a", 'accept org-cmek-requird reason="typo"'),
        topic("t-b", "accept org-cmek-required until=2999-01-01"),
        topic("t-c", 'accept org-cmek-required reason="x" util=2999-01-01'),
        topic("t-d", "acept org-cmek-required"),
        topic("t-e", 'accept duplicate-topic reason="never an error"'),
    )
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 1
    errors = [x for x in result.stdout.splitlines() if "error[" in x]
    form = '`# reconcile: accept CODE reason="..." until=YYYY-MM-DD` (until optional)'
    no_reason = (
        'error[acceptance-invalid]: the acceptance of org-cmek-required has no reason: say '
        'why it is accepted (reason="..."), for the reviewer and the auditor'
    )
    assert errors[:3] == [
        "specs/topics.yaml:6:7: error[acceptance-invalid]: until '2027-02-30' is not a date: "
        "write YYYY-MM-DD, e.g. 2027-03-31",
        f"specs/topics.yaml:10:7: {no_reason}",
        "specs/topics.yaml:12:7: error[acceptance-invalid]: topics entry "
        "'acme-payments/legacy': not a topic name: write projects/PROJECT/topics/TOPIC "
        "(TOPIC may use * and ? to match several)",
    ]
    assert errors[3] == (
        "specs/topics.yaml:15:7: error[missing-field]: spec > acceptedFindings > 3 > reason "
        "is required but missing"
    )
    assert errors[4].startswith(
        "specs/topics.yaml:20:3: error[acceptance-invalid]: 'org-cmek-requird' is not a "
        "finding that can be accepted; did you mean 'org-cmek-required'? (accepted can be: "
        "drift-allowed-and-disallowed-stale, drift-allows-disallowed-locations, "
    )
    assert " existing-cmek-required, " in errors[4]
    assert errors[5:8] == [
        f"specs/topics.yaml:27:3: {no_reason}",
        "specs/topics.yaml:34:3: error[acceptance-invalid]: util= is unknown in the "
        f"acceptance of org-cmek-required; write {form}",
        "specs/topics.yaml:41:3: error[acceptance-invalid]: a `# reconcile:` comment says "
        f"'acept', which reconcile does not read; write {form}",
    ]
    assert errors[8].startswith(
        "specs/topics.yaml:48:3: error[acceptance-invalid]: 'duplicate-topic' is not a "
        "finding that can be accepted"
    )
    assert errors[8].endswith(
        "region-restricted, transform-exports-at-plan, transform-model-region; an error "
        "never is)"
    )
    assert len(errors) == 9


def test_until_is_the_last_day_it_holds_and_must_be_a_calendar_day() -> None:
    from reconciler.acceptance import Acceptance, is_accepted, is_day, settle
    from reconciler.diagnostics import Diagnostic, Severity

    finding = Diagnostic("s.yaml", 3, 1, Severity.WARNING, "region-restricted", "m")
    accept = Acceptance("region-restricted", "r", "2027-03-31", "s.yaml", 2, 1, "inSource",
                        first=1, last=5)
    on_the_day = settle([finding], [accept], on="2027-03-31")
    assert [is_accepted(d) for d in on_the_day] == [True]
    after = settle([finding], [accept], on="2027-04-01")
    assert [(is_accepted(d), d.code) for d in after] == [
        (False, "region-restricted"), (False, "acceptance-expired"),
    ]
    assert [is_day(t) for t in ("2028-02-29", "2027-02-29", "2100-02-29", "2027-4-30")] == [
        True, False, False, False,
    ]


OWNER_HEAD = (
    "apiVersion: reconcile.pubsub/v1\nkind: Owner\nmetadata: {name: platform}\nspec:\n"
    "  acceptedFindings:\n"
)


def test_an_empty_topics_list_accepts_nothing_and_is_an_error(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """Once read as omitted: `topics: []` (a templated list that came out empty)
    accepted every such finding in the tree."""
    tree(tmp_path, OWNER_HEAD + '    - {code: org-cmek-required, reason: "x", topics: []}\n',
         topic("orders"))
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    assert ("specs/topics.yaml:6:54: error[acceptance-invalid]: the acceptance of "
            "org-cmek-required lists no topics") in result.stdout
    assert "accepted[" not in result.stdout and "warning[org-cmek-required]" in result.stdout


def test_a_reason_of_invisible_characters_is_no_reason(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    tree(tmp_path, OWNER_HEAD + '    - {code: org-cmek-required, reason: "\\u200b\\u2060 "}\n',
         topic("orders"))
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    assert "the acceptance of org-cmek-required has no reason" in result.stdout


def test_a_duplicate_acceptance_names_the_one_that_took_its_findings(
    run_cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """Once "there is none to accept", beside the finding the first one accepted."""
    entry = '    - {code: org-cmek-required, reason: "x"}\n'
    tree(tmp_path, OWNER_HEAD + entry + entry, topic("orders"))
    result = validate(run_cli, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        "specs/topics.yaml:7:7: warning[acceptance-unused]: the acceptance of "
        "org-cmek-required for the whole spec tree accepts no finding: each one it covers "
        "is accepted already, by the acceptance at specs/topics.yaml:6 (remove one of the "
        "two, or narrow its topics)"
    )
