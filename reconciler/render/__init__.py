"""Renderers: a Plan (or diagnostics) as text for people, markdown for a pull request,
JSON for machines. They return strings and write nothing: the commands hand them to
the output boundary (reconciler/commands/output.py).

    formats.render(plan, fmt, color)   the one entry for a plan (text, json, markdown,
                                       github, sarif)
    diagnostics                        diagnostics as lines, a summary, JSON, GitHub
                                       annotations, SARIF: REPORTERS by name
    findings                           what a plan reports at the spec lines
    escape                             data made inert for where it is printed

This package's own module is light (the validate path reads FORMATS and imports
`diagnostics` and `escape` without the plan model).
"""

FORMATS = ("text", "json", "markdown", "github", "sarif")
