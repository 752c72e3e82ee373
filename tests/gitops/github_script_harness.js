// Runs one `actions/github-script` script the way the action does (an async function
// of github, context, core, require, process) against an in-memory repository whose
// state is a JSON file: comments, pull requests (by merge commit), labels, issues,
// workflow runs. Writes back the state with the step's outputs, failure message and
// the calls made. Used by the tests of tests/gitops/.
const fs = require('fs');
const [scriptPath, statePath] = process.argv.slice(2);
const script = fs.readFileSync(scriptPath, 'utf8');
const state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
Object.assign(process.env, state.env || {});
state.comments = state.comments || [];
state.issues = state.issues || [];
state.labels = state.labels || {};
const outputs = {};
let failed = null;
let nextId = 100 + state.comments.length;
let nextIssue = 1 + state.issues.length;
const core = {
  setOutput: (k, v) => { outputs[k] = String(v); },
  setFailed: (m) => { failed = String(m); },
  notice: () => {},
};
const calls = [];
const bot = { type: 'Bot', login: 'github-actions[bot]' };
const github = {
  paginate: async (fn, args) => (await fn(args)).data,
  rest: {
    issues: {
      listComments: async (a) => { calls.push(['listComments', a]); return { data: state.comments.filter((c) => c.issue_number === a.issue_number) }; },
      updateComment: async (a) => { calls.push(['updateComment', a]); state.comments.find((c) => c.id === a.comment_id).body = a.body; return { data: {} }; },
      createComment: async (a) => {
        calls.push(['createComment', a]);
        state.comments.push({ id: nextId++, issue_number: a.issue_number, body: a.body, user: bot });
        return { data: {} };
      },
      addLabels: async (a) => {
        calls.push(['addLabels', a]);
        const now = state.labels[a.issue_number] || [];
        state.labels[a.issue_number] = [...new Set([...now, ...a.labels])];
        return { data: {} };
      },
      removeLabel: async (a) => {
        calls.push(['removeLabel', a]);
        state.labels[a.issue_number] = (state.labels[a.issue_number] || []).filter((l) => l !== a.name);
        return { data: {} };
      },
      listForRepo: async (a) => {
        calls.push(['listForRepo', a]);
        return { data: state.issues.filter((i) => i.state === a.state && (!a.labels || i.labels.includes(a.labels))) };
      },
      create: async (a) => {
        calls.push(['createIssue', a]);
        state.issues.push({ number: nextIssue++, title: a.title, body: a.body, labels: a.labels || [], state: 'open', user: bot });
        return { data: {} };
      },
      update: async (a) => {
        calls.push(['updateIssue', a]);
        const issue = state.issues.find((i) => i.number === a.issue_number);
        for (const k of ['body', 'state', 'title']) if (a[k] !== undefined) issue[k] = a[k];
        return { data: {} };
      },
    },
    repos: {
      listPullRequestsAssociatedWithCommit: async (a) => {
        calls.push(['listPRs', a]);
        const byCommit = state.prsByCommit || {};
        return { data: byCommit[a.commit_sha] || state.prs || [] };
      },
    },
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
