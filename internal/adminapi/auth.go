package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Who may call the admin API is Kubernetes' to say: the bearer token is
// reviewed by the API server (TokenReview), and the user it names must be
// allowed the verb on the GameRoom's admin subresource
// (SubjectAccessReview): get to read a character's history, update to
// act on players. No such subresource is served; it exists only in RBAC
// rules, so granting it grants nothing else (docs/operations.md,
// "Moderation").

// Subresource is the RBAC subresource of gamerooms the admin API checks.
const Subresource = "admin"

// The verbs: reading, and acting.
const (
	VerbRead = "get"
	VerbAct  = "update"
)

// caller is the user a request authenticated as.
type caller struct {
	Name   string
	Groups []string
	UID    string
	Extra  map[string]authorizationv1.ExtraValue
}

// authError is an answer to a request that is not allowed.
type authError struct {
	status int
	reason string
}

func (e *authError) Error() string { return e.reason }

// authenticate reviews the request's bearer token.
func authenticate(ctx context.Context, c client.Client, r *http.Request) (caller, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return caller{}, &authError{http.StatusUnauthorized, "a bearer token is required (Authorization: Bearer <token>)"}
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: strings.TrimSpace(token)}}
	if err := c.Create(ctx, review); err != nil {
		return caller{}, fmt.Errorf("reviewing the token: %w", err)
	}
	if !review.Status.Authenticated {
		reason := "the token is not valid"
		if review.Status.Error != "" {
			reason += ": " + review.Status.Error
		}
		return caller{}, &authError{http.StatusUnauthorized, reason}
	}
	u := review.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	return caller{Name: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra}, nil
}

// authorize asks whether who may verb the room's admin subresource.
func authorize(ctx context.Context, c client.Client, who caller, verb, namespace, room string) error {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: who.Name, Groups: who.Groups, UID: who.UID, Extra: who.Extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: gamev1.GroupVersion.Group, Resource: "gamerooms",
			Subresource: Subresource, Namespace: namespace, Name: room, Verb: verb},
	}}
	if err := c.Create(ctx, review); err != nil {
		return fmt.Errorf("reviewing access: %w", err)
	}
	if !review.Status.Allowed {
		reason := fmt.Sprintf("%s may not %s gamerooms/%s of %s/%s", who.Name, verb, Subresource, namespace, room)
		if r := review.Status.Reason; r != "" {
			reason += ": " + r
		}
		return &authError{http.StatusForbidden, reason}
	}
	return nil
}
