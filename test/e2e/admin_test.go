package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/adminapi"
	"github.com/roomkeeper/roomkeeper/internal/joinapi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// serviceAccountToken makes a ServiceAccount in default, granted verbs
// on gamerooms/admin when verbs are given, and returns a token of it.
func serviceAccountToken(t *testing.T, ctx context.Context, name string, verbs ...string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := k8s.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sa) })
	if len(verbs) > 0 {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{gamev1.GroupVersion.Group}, Resources: []string{"gamerooms/" + adminapi.Subresource}, Verbs: verbs}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}}}
		if err := k8s.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding); _ = k8s.Delete(context.Background(), role) })
	}
	clientset, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := clientset.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// roomAdminToken makes a ServiceAccount in default bound to the
// ClusterRole Roomkeeper ships for operators (config/rbac, installed by
// make dev under make deploy's name) and returns a token of it.
func roomAdminToken(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	tok := serviceAccountToken(t, ctx, name)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "roomkeeper-room-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}}}
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })
	return tok
}

// roomctlAdmin runs bin/roomctl against the cluster's admin API.
func roomctlAdmin(ctx context.Context, token string, args ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	args = append(args, "--admin-api", "http://"+adminAddr, "--room", "demo", "--token", token)
	out, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "roomctl"), args...).CombinedOutput()
	return string(out), err
}

// TestAnOperatorAnswersASupportTicket: a player picks a sword up and
// wears it; an operator whose ServiceAccount is granted get on the room's
// gamerooms/admin reads the character's history with roomctl (the pickup,
// the equip, a checkpoint holding the worn sword) and the replay check
// of its items passes; a ServiceAccount without the grant is refused.
func TestAnOperatorAnswersASupportTicket(t *testing.T) {
	ctx := cluster(t)
	const key = "support-e2e-key"
	item := wearNearestSword(t, ctx, play(t, ctx, key))
	characters, err := joinAPI.Characters(ctx, "default", "demo", key)
	if err != nil || len(characters) != 1 {
		t.Fatalf("the player's characters: %+v %v", characters, err)
	}
	character := characters[0].ID

	operator := serviceAccountToken(t, ctx, "support-e2e", "get")
	var history string
	eventually(t, ctx, "a checkpoint with the worn sword in the history", func() error {
		out, err := roomctlAdmin(ctx, operator, "history", "character", character)
		if err != nil {
			return fmt.Errorf("roomctl history: %w\n%s", err, out)
		}
		if !strings.Contains(out, item+"@weapon") {
			return fmt.Errorf("no checkpoint with %s@weapon yet:\n%s", item, out)
		}
		history = out
		return nil
	})
	for _, want := range []string{"loot.pickup " + item, "inventory.equip " + item, "checkpoint"} {
		if !strings.Contains(history, want) {
			t.Errorf("the history lacks %q:\n%s", want, history)
		}
	}
	if out, err := roomctlAdmin(ctx, operator, "audit", "replay", "--character", character); err != nil || !strings.Contains(out, " 0 divergences") {
		t.Errorf("roomctl audit replay: %v\n%s", err, out)
	}

	stranger := serviceAccountToken(t, ctx, "stranger-e2e")
	if out, err := roomctlAdmin(ctx, stranger, "history", "character", character); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a ServiceAccount without the grant: %v\n%s", err, out)
	}
}

// TestAnOperatorBansAPlayer: on make dev's cluster, an operator bound to
// the shipped roomkeeper-room-admin ClusterRole bans a playing user with roomctl: the map
// (a real pod, told by the manager) ends the session with 4001 banned and
// the join API refuses the user; lifting the ban lets it back. An
// operator granted only get may not ban.
func TestAnOperatorBansAPlayer(t *testing.T) {
	ctx := cluster(t)
	const key = "banned-e2e-key"
	c := play(t, ctx, key)
	if _, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(c.Welcome().PlayerID) }); err != nil {
		t.Fatal(err)
	}
	user := joinapi.UserID(key)
	reader := serviceAccountToken(t, ctx, "reader-e2e", "get")
	if out, err := roomctlAdmin(ctx, reader, "admin", "ban", "--user", user, "--duration", "1h"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("a ban by an operator granted only get: %v\n%s", err, out)
	}
	moderator := roomAdminToken(t, ctx, "moderator-e2e")
	out, err := roomctlAdmin(ctx, moderator, "admin", "ban", "--user", user, "--duration", "1h", "--reason", "e2e")
	if err != nil || !strings.Contains(out, "ban: 1 players") {
		t.Fatalf("roomctl admin ban: %v\n%s", err, out)
	}
	s, _ := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Closed != nil })
	var ce *websocket.CloseError
	if !errors.As(s.Closed, &ce) || ce.Code != protocol.CloseKicked || ce.Text != string(protocol.CodeBanned) {
		t.Errorf("the banned player's connection ended with %v, want 4001 banned", s.Closed)
	}
	if _, err := joinAPI.Join(ctx, "default", "demo", pkgclient.JoinRequest{AuthKey: key}); err == nil || !strings.Contains(err.Error(), "banned") {
		t.Errorf("a banned user's join: %v, want banned", err)
	}
	if out, err := roomctlAdmin(ctx, moderator, "admin", "unban", "--user", user); err != nil {
		t.Fatalf("roomctl admin unban: %v\n%s", err, out)
	}
	play(t, ctx, key) // welcome again
}
