package compile

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Picture formats Draw writes.
const (
	PictureMermaid = "mermaid"
	PictureDot     = "dot"
)

// dependsTask finds the task names an enhanced `depends` expression names ("a.Succeeded && b").
var dependsTask = regexp.MustCompile(`([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[A-Za-z]+)?`)

// Draw pictures a compiled Workflow's DAG, as Mermaid's flowchart or Graphviz's dot: one box a
// task, in the order the Workflow runs them, an arrow a dependency. A task fanned out over a
// list (withParam) says "one per node"; a plugin task names its WorkflowTemplate.
func Draw(wf *wfv1.Workflow, format string) ([]byte, error) {
	entry := wf.GetTemplateByName(wf.Spec.Entrypoint)
	if entry == nil || entry.DAG == nil {
		return nil, fmt.Errorf("workflow %s: entrypoint %q is not a DAG", wf.Name, wf.Spec.Entrypoint)
	}
	tasks := entry.DAG.Tasks
	id := map[string]string{}
	for i, t := range tasks {
		id[t.Name] = "t" + strconv.Itoa(i)
	}
	var b bytes.Buffer
	switch format {
	case PictureMermaid:
		b.WriteString("flowchart LR\n")
	case PictureDot:
		fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n  node [shape=box];\n", strconv.Quote(wf.Name))
	default:
		return nil, fmt.Errorf("picture format %q: want %s or %s", format, PictureMermaid, PictureDot)
	}
	for _, t := range tasks {
		label := t.Name
		switch {
		case t.WithParam != "":
			label += " (one per node)"
		case t.TemplateRef != nil:
			label += " (" + t.TemplateRef.Name + ")"
		}
		if format == PictureMermaid {
			fmt.Fprintf(&b, "  %s[%s]\n", id[t.Name], strconv.Quote(label))
		} else {
			fmt.Fprintf(&b, "  %s [label=%s];\n", id[t.Name], strconv.Quote(label))
		}
	}
	for _, t := range tasks {
		for _, m := range dependsTask.FindAllStringSubmatch(t.Depends, -1) {
			from, ok := id[m[1]]
			if !ok {
				continue
			}
			if format == PictureMermaid {
				fmt.Fprintf(&b, "  %s --> %s\n", from, id[t.Name])
			} else {
				fmt.Fprintf(&b, "  %s -> %s;\n", from, id[t.Name])
			}
		}
	}
	if format == PictureDot {
		b.WriteString("}\n")
	}
	return b.Bytes(), nil
}
