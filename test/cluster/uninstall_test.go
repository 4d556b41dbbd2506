package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
)

// uninstall removes Roomkeeper as docs/install.md says, deletes the
// namespaces the suite made for rooms, and checks that nothing of
// Roomkeeper is left: no object of any kind the API server lists that
// the release or the operator made, no CRD of its group.
func uninstall() error {
	if err := runDocs("uninstall"); err != nil {
		return err
	}
	if _, err := kubectl("", "delete", "namespace", roomNamespace, hostPortNamespace, "--wait", "--timeout=3m"); err != nil {
		return err
	}
	left, err := leftovers()
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("after the uninstall these are left: %s", strings.Join(left, ", "))
	}
	return nil
}

// leftovers lists the objects of every listable kind that carry
// Roomkeeper's marks: the chart's name label or Helm release annotation,
// the operator's managed-by label, the API group, or a namespace of the
// suite's.
func leftovers() ([]string, error) {
	kinds, err := kubectl("", "api-resources", "--verbs=list", "-o", "name")
	if err != nil {
		return nil, err
	}
	var listed []string
	for _, kind := range strings.Fields(kinds) {
		if kind != "events" && kind != "events.events.k8s.io" { // records of what happened, not objects of ours
			listed = append(listed, kind)
		}
	}
	raw, err := kubectl("", "get", strings.Join(listed, ","), "--all-namespaces", "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace string
				Labels          map[string]string
				Annotations     map[string]string
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, err
	}
	ours := map[string]bool{managerNamespace: true, roomNamespace: true, hostPortNamespace: true}
	var left []string
	for _, o := range list.Items {
		m := o.Metadata
		if m.Labels["app.kubernetes.io/name"] == "roomkeeper" || m.Labels["app.kubernetes.io/managed-by"] == "roomkeeper" ||
			m.Annotations["meta.helm.sh/release-name"] == "roomkeeper" || strings.HasSuffix(m.Name, ".game.roomkeeper.dev") ||
			ours[m.Namespace] || (o.Kind == "Namespace" && ours[m.Name]) {
			left = append(left, fmt.Sprintf("%s %s/%s", o.Kind, m.Namespace, m.Name))
		}
	}
	return left, nil
}
