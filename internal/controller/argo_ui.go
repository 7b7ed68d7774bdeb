package controller

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ParseArgoUI checks the address of Argo's UI a site gives (--argo-ui-url): an absolute
// http or https URL, its path the UI's base (Argo's --base-href), without a query, fragment
// or credentials, which a link in every CR's status must not carry. It returns the address
// without its trailing slash; "" stays "" (no links).
func ParseArgoUI(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--argo-ui-url: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("--argo-ui-url: %q: want an http:// or https:// address", s)
	case u.Host == "":
		return "", fmt.Errorf("--argo-ui-url: %q: no host", s)
	case u.User != nil:
		return "", errors.New("--argo-ui-url: credentials in the address would be copied into every CR's status")
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		return "", fmt.Errorf("--argo-ui-url: %q: no query or fragment: the address is the UI's base", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// WorkflowURL is a Workflow's page in Argo's UI at ui (ParseArgoUI's), "" when either is
// unknown.
func WorkflowURL(ui, namespace, workflow string) string {
	if ui == "" || workflow == "" {
		return ""
	}
	return ui + "/workflows/" + url.PathEscape(namespace) + "/" + url.PathEscape(workflow)
}
