package adminapi

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/roomdb"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// Moderation (docs/operations.md, "Moderation"): kick, ban, save and
// message act on the room's maps. The manager signs, for each map's pod,
// a one-use admin ticket with the room's key and posts the command to the
// pod's HTTP port; bans live in the room's database, where every map
// checks each hello.

// adminTicketTTL is an admin ticket's life: one request's.
const adminTicketTTL = 10 * time.Second

// maxBanDuration bounds a ban (ten years: for ever, in practice).
const maxBanDuration = 10 * 365 * 24 * time.Hour

// ModerationRequest is the body of kick, bans, save and message.
type ModerationRequest struct {
	User      string `json:"user,omitempty"`
	Character string `json:"character,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Duration is a ban's ("72h").
	Duration string `json:"duration,omitempty"`
	// Map is the MapInstance a save or a message is for; empty: every map
	// of the room.
	Map  string `json:"map,omitempty"`
	Text string `json:"text,omitempty"`
}

// ModerationAnswer says what a command did on the room's maps.
type ModerationAnswer struct {
	// Affected counts the seats kicked, saved or told, over the maps.
	Affected int `json:"affected"`
	// Maps are the map instances that answered.
	Maps []string `json:"maps"`
	// Failed are the maps that did not, with why.
	Failed map[string]string `json:"failed,omitempty"`
	// Until is a ban's end.
	Until *time.Time `json:"until,omitempty"`
}

// decode reads the request's body.
func decode(req request) (ModerationRequest, error) {
	var m ModerationRequest
	dec := json.NewDecoder(io.LimitReader(req.r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, &badRequest{"the body: " + err.Error()}
	}
	return m, nil
}

// kick ends the sessions of a user or a character on every map.
func (s *Server) kick(req request) (any, error) {
	m, err := decode(req)
	if err != nil {
		return nil, err
	}
	if (m.User == "") == (m.Character == "") {
		return nil, &badRequest{"name a user or a character, one of them"}
	}
	return s.push(req, "", protocol.AdminCommand{Action: protocol.AdminKick, User: m.User, Character: m.Character, Reason: m.Reason})
}

// ban bans a user for a duration and ends its sessions on every map.
func (s *Server) ban(req request) (any, error) {
	m, err := decode(req)
	if err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(m.Duration)
	if m.User == "" || err != nil || d <= 0 || d > maxBanDuration {
		return nil, &badRequest{fmt.Sprintf("a ban needs a user and a duration from 1s to %s (\"72h\")", maxBanDuration)}
	}
	until := time.Now().Add(d)
	if err := req.db.BanUser(req.ctx, store.Ban{UserID: m.User, Until: until, Reason: m.Reason, BannedBy: req.who.Name}); err != nil {
		return nil, err
	}
	answer, err := s.push(req, "", protocol.AdminCommand{Action: protocol.AdminBan, User: m.User, Reason: m.Reason})
	answer.Until = &until
	return answer, err
}

// unban lifts a user's ban.
func (s *Server) unban(req request) (any, error) {
	lifted, err := req.db.LiftBan(req.ctx, req.r.PathValue("id"))
	if err == nil && !lifted {
		err = fmt.Errorf("user %s is not banned: %w", req.r.PathValue("id"), store.ErrNotFound)
	}
	return ModerationAnswer{}, err
}

// save writes a map's (or every map's) checkpoints now.
func (s *Server) save(req request) (any, error) {
	m, err := decode(req)
	if err != nil {
		return nil, err
	}
	return s.push(req, m.Map, protocol.AdminCommand{Action: protocol.AdminSave})
}

// message tells everyone on a map (or on every map) something.
func (s *Server) message(req request) (any, error) {
	m, err := decode(req)
	if err != nil {
		return nil, err
	}
	if m.Text == "" || len(m.Text) > 1000 {
		return nil, &badRequest{"a message needs a text of 1 to 1,000 bytes"}
	}
	return s.push(req, m.Map, protocol.AdminCommand{Action: protocol.AdminMessage, Text: m.Text})
}

// push sends cmd to the pods of the room's maps (only instance's when
// set) and sums their answers. A map that cannot be reached is named in
// Failed; the others still act.
func (s *Server) push(req request, instance string, cmd protocol.AdminCommand) (ModerationAnswer, error) {
	var maps gamev1.MapInstanceList
	if err := s.Client.List(req.ctx, &maps, client.InNamespace(req.room.Namespace),
		client.MatchingLabels{gamev1.LabelRoom: req.room.Name}); err != nil {
		return ModerationAnswer{}, err
	}
	keys, err := roomdb.Keys(req.ctx, s.Client, req.room)
	if err != nil {
		return ModerationAnswer{}, fmt.Errorf("the room's signing keys: %w", err)
	}
	answer := ModerationAnswer{Maps: []string{}, Failed: map[string]string{}}
	for _, mi := range maps.Items {
		if instance != "" && mi.Name != instance {
			continue
		}
		pods := podsOf(&mi)
		if len(pods) == 0 {
			answer.Failed[mi.Name] = "no pod runs the map"
		}
		for _, pod := range pods {
			n, err := s.pushTo(req, keys, &mi, pod, cmd)
			if err != nil {
				answer.Failed[mi.Name] = err.Error()
				continue
			}
			answer.Affected += n
			answer.Maps = append(answer.Maps, mi.Name)
		}
	}
	if instance != "" && len(answer.Maps) == 0 && len(answer.Failed) == 0 {
		return answer, fmt.Errorf("map instance %s of room %s: %w", instance, req.room.Name, store.ErrNotFound)
	}
	return answer, nil
}

// podsOf are the map's pods: its own, and during a handover the one
// taking over (a player may be on either).
func podsOf(mi *gamev1.MapInstance) []string {
	var pods []string
	if mi.Status.PodName != "" {
		pods = append(pods, mi.Status.PodName)
	}
	if h := mi.Status.Handover; h != nil && h.To != "" && h.To != mi.Status.PodName {
		pods = append(pods, h.To)
	}
	return pods
}

// pushTo posts cmd to one pod with a ticket signed for its map.
func (s *Server) pushTo(req request, keys token.KeySet, mi *gamev1.MapInstance, podName string, cmd protocol.AdminCommand) (int, error) {
	var pod corev1.Pod
	if err := s.Client.Get(req.ctx, types.NamespacedName{Namespace: mi.Namespace, Name: podName}, &pod); err != nil {
		return 0, err
	}
	if pod.Status.PodIP == "" {
		return 0, fmt.Errorf("pod %s has no address yet", podName)
	}
	ticket, _, err := token.NewSigner(token.StaticKeys(keys), time.Now).Sign(token.Claims{Type: token.TypeAdmin,
		Subject: req.who.Name, Character: token.AdminCharacter, Room: req.room.Name, Map: mi.Name}, adminTicketTTL)
	if err != nil {
		return 0, err
	}
	body, _ := json.Marshal(cmd) // plain strings: cannot fail
	port := s.PodHTTPPort
	if port == 0 {
		port = podenv.HTTPPort
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + "/admin/v1/commands"
	httpReq, err := http.NewRequestWithContext(req.ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	httpReq.Header.Set("Authorization", "Bearer "+ticket)
	httpReq.Header.Set("Content-Type", "application/json")
	resp, err := s.podClient().Do(httpReq)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("pod %s answered %d: %s", podName, resp.StatusCode, bytes.TrimSpace(raw))
	}
	var a protocol.AdminAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, fmt.Errorf("pod %s: %w", podName, err)
	}
	return a.Affected, nil
}

// podClient is the HTTP client to the pods: each command is small and
// quick, a pod that does not answer in time is reported, not waited for.
func (s *Server) podClient() *http.Client {
	return &http.Client{Timeout: 15 * time.Second}
}
