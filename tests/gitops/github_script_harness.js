// Runs one `actions/github-script` script the way the action does (an async function
// of github, context, core, require, process) against an in-memory repository whose
// state is a JSON file: comments, pull requests, workflow runs. Writes back the state
// with the step's outputs and failure message. Used by test_comment_scripts.py.
const fs = require('fs');
const [scriptPath, statePath] = process.argv.slice(2);
const script = fs.readFileSync(scriptPath, 'utf8');
const state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
Object.assign(process.env, state.env || {});
const outputs = {};
let failed = null;
let nextId = 100 + state.comments.length;
const core = {
  setOutput: (k, v) => { outputs[k] = String(v); },
  setFailed: (m) => { failed = String(m); },
  notice: () => {},
};
const calls = [];
const github = {
  paginate: async (fn, args) => (await fn(args)).data,
  rest: {
    issues: {
      listComments: async (a) => { calls.push(['listComments', a]); return { data: state.comments.filter((c) => c.issue_number === a.issue_number) }; },
      updateComment: async (a) => { calls.push(['updateComment', a]); state.comments.find((c) => c.id === a.comment_id).body = a.body; return { data: {} }; },
      createComment: async (a) => {
        calls.push(['createComment', a]);
        state.comments.push({ id: nextId++, issue_number: a.issue_number, body: a.body, user: { type: 'Bot', login: 'github-actions[bot]' } });
        return { data: {} };
      },
    },
    repos: { listPullRequestsAssociatedWithCommit: async (a) => { calls.push(['listPRs', a]); return { data: state.prs || [] }; } },
    actions: {
      getWorkflowRun: async (a) => { calls.push(['getWorkflowRun', a]); return { data: { workflow_id: 4242 } }; },
      listWorkflowRuns: async (a) => { calls.push(['listWorkflowRuns', a]); return { data: { workflow_runs: state.runs || [] } }; },
    },
  },
};
(async () => {
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  await new AsyncFunction('github', 'context', 'core', 'require', 'process', script)(
    github, state.context, core, require, process);
  fs.writeFileSync(statePath, JSON.stringify({ ...state, outputs, failed, calls }));
})().catch((e) => { console.error(e); process.exit(1); });
