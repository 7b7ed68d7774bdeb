package controller_test

import (
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/controller"
)

func TestParseArgoUI(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "https://argo.site.example", want: "https://argo.site.example"},
		{in: "https://argo.site.example:2746/argo/", want: "https://argo.site.example:2746/argo"},
		{in: "http://10.0.0.5:2746", want: "http://10.0.0.5:2746"},
		{in: "argo.site.example", err: `"argo.site.example": want an http:// or https:// address`},
		{in: "ftp://argo.site.example", err: "want an http:// or https:// address"},
		{in: "https://", err: "no host"},
		{in: "https://admin:secret@argo.site.example", err: "credentials in the address would be copied into every CR's status"},
		{in: "https://argo.site.example/?token=x", err: "no query or fragment"},
		{in: "https://argo.site.example/#/workflows", err: "no query or fragment"},
		{in: "https://argo.site.example/?", err: "no query or fragment"},
		{in: "https://argo site", err: "--argo-ui-url: parse"},
	} {
		got, err := controller.ParseArgoUI(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseArgoUI(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseArgoUI(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestWorkflowURL(t *testing.T) {
	for _, tc := range []struct{ ui, ns, wf, want string }{
		{"https://argo.site.example/argo", "edge-a", "prov-abc-1-x7k2p", "https://argo.site.example/argo/workflows/edge-a/prov-abc-1-x7k2p"},
		{"", "edge-a", "prov-abc-1-x7k2p", ""},
		{"https://argo.site.example", "edge-a", "", ""},
	} {
		if got := controller.WorkflowURL(tc.ui, tc.ns, tc.wf); got != tc.want {
			t.Errorf("WorkflowURL(%q, %q, %q) = %q, want %q", tc.ui, tc.ns, tc.wf, got, tc.want)
		}
	}
}
