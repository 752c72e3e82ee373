"""The Org Policy service (`google.cloud.orgpolicy.v2.OrgPolicy`): policies stored
in the server state, evaluated by `reconciler.orgpolicy`, the evaluator the offline
validator uses."""
