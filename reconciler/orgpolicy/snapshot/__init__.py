"""The org-policy snapshot file, read strictly and validated like the specs: every
problem is a `org-policy.yaml:line:col` diagnostic (unknown keys with a suggestion, a
field spelled both ways (`displayName` and `display_name`: the reader takes REST's
camelCase and the proto's snake_case, never both), values of the wrong type,
malformed policy and constraint names, misspelt constraints, rules mixing kinds,
unknown regions and value groups, duplicate policies, constraints and ancestry
entries, an ancestry whose parent is not a folder or an organization or that loops,
policies for projects no spec uses; custom constraints whose id, method types,
action or condition the service would refuse, a condition's CEL error at its own line
and column), so that a typo cannot quietly switch the org-policy checks off. Policies
and custom constraints with errors are left out of the store, and the errors make
`validate` fail and the file refused wherever it is loaded (`load_snapshot`: the
local server's seed and `--org-policy`), with the same messages.

A custom constraint whose condition parses but uses what reconcile's CEL library does
not have (`ConditionError.unsupported`: the service may accept it) is kept; `validate`
names it once per project that enforces or dry-runs it, as not judged
(reconciler/orgpolicy/unjudged.py: `org-custom-uncompilable`), and names each project
the snapshot does not place under an organization, whose custom constraints it
therefore cannot know (`org-custom-no-ancestry`).

Documents: Policy resources (Org Policy v2 JSON shape, `spec` and `dryRunSpec`),
CustomConstraint resources (the shape `gcloud org-policies set-custom-constraint`
takes: `name: organizations/ORG/customConstraints/custom.NAME`, `resourceTypes`,
`methodTypes`, `condition`, `actionType`, `displayName`, `description`), and an
`ancestry:` mapping (a project's organization names the custom constraints it obeys;
`projects/P: none` says Resource Manager places P in no folder or organization, so
no custom constraint applies to it: `policy pull` writes it so, and a project the
mapping leaves out is unknown, never taken for one in no organization).

    read_snapshot(path, diags, projects=(), gate=None) -> PolicyStore   validate
    load_snapshot(path) -> PolicyStore       servers and backends: an InputError instead
    dump_snapshot(store, path, header="")    `policy pull`: written atomically
    ancestry_line(path, child) -> int        the line of `child:` in its `ancestry:`

The parts: files.py (the file read and written), checker.py (the fields and the
checker every document is read with), policies.py, custom.py and ancestry.py (each
kind of document).
"""

from reconciler.orgpolicy.snapshot.ancestry import ancestry_line
from reconciler.orgpolicy.snapshot.checker import READ_CONSTRAINTS
from reconciler.orgpolicy.snapshot.files import dump_snapshot, load_snapshot, read_snapshot

__all__ = ["READ_CONSTRAINTS", "ancestry_line", "dump_snapshot", "load_snapshot",
           "read_snapshot"]
