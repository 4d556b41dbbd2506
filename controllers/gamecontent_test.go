package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/packs"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// shippedPack reads config/content/<name>.yaml into namespace ns.
func shippedPack(t *testing.T, ns, name string) *gamev1.GameContent {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "content", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	gc := &gamev1.GameContent{}
	if err := yaml.UnmarshalStrict(data, gc); err != nil {
		t.Fatal(err)
	}
	gc.Namespace = ns
	return gc
}

// validCondition waits for the pack's Valid condition of its generation.
func validCondition(ctx context.Context, g Gomega, ns, name string) *metav1.Condition {
	var c *metav1.Condition
	g.Eventually(func(g Gomega) {
		gc := &gamev1.GameContent{}
		g.Expect(k8s.Get(ctx, key(ns, name), gc)).To(Succeed())
		c = meta.FindStatusCondition(gc.Status.Conditions, gamev1.ConditionValid)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(gc.Generation))
	}).Should(Succeed())
	return c
}

// TestEveryShippedPackIsValidAndPublished: each pack of config/content is
// admitted by the schema, found valid, and its revision's ConfigMap holds
// the built-in pack of its name.
func TestEveryShippedPackIsValidAndPublished(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	for _, name := range content.Names() {
		g.Expect(k8s.Create(ctx, shippedPack(t, ns, name))).To(Succeed())
	}
	for _, name := range content.Names() {
		c := validCondition(ctx, g, ns, name)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", name, c.Message)
		gc := &gamev1.GameContent{}
		g.Expect(k8s.Get(ctx, key(ns, name), gc)).To(Succeed())
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, key(ns, gc.Status.ConfigMap), cm)).To(Succeed())
		g.Expect(cm.Immutable).To(HaveValue(BeTrue()))
		pack, err := packs.Load(cm)
		g.Expect(err).NotTo(HaveOccurred())
		builtIn, _ := content.Named(name)
		encoded, _ := builtIn.Encode()
		g.Expect(gc.Status.Revision).To(Equal(content.Revision(encoded)), "%s: the revision is the built-in pack's", name)
		g.Expect(pack.Name).To(Equal(name))
	}
}

// TestTheSchemaRefusesABrokenPackNamingTheField: what one field can say
// of itself is refused at admission, with the field's path.
func TestTheSchemaRefusesABrokenPackNamingTheField(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	for _, tc := range []struct {
		name  string
		edit  func(*gamev1.GameContentSpec)
		field string
	}{
		{"an unknown slot", func(s *gamev1.GameContentSpec) { s.Items[5].Slots = []gamev1.ContentSlot{"tail"} }, "spec.items[5].slots[0]"},
		{"drops over 1000 per mille", func(s *gamev1.GameContentSpec) { s.Enemies[0].Drops[0].PerMille = 900 }, "spec.enemies[0].drops"},
		{"a boss without its key", func(s *gamev1.GameContentSpec) { s.Key = "" }, "spec.key"},
		{"a quota outside its anchors", func(s *gamev1.GameContentSpec) {
			s.Critical[0].Type, s.Critical[0].Quota = content.InstanceQuota, 2
		}, "spec.critical[0].quota"},
		{"a worn item that stacks", func(s *gamev1.GameContentSpec) { s.Items[5].Stackable = true }, "spec.items[5].stackable"},
		{"no enemies", func(s *gamev1.GameContentSpec) { s.Enemies = nil }, "spec.enemies"},
		{"a zero hp player", func(s *gamev1.GameContentSpec) { s.Player.HP = 0 }, "spec.player.hp"},
		{"a self ability with a debuff", func(s *gamev1.GameContentSpec) {
			s.Abilities[3].Debuff = &gamev1.ContentBuff{Attack: 2, Duration: 5}
		}, "spec.abilities[3].target"},
		{"a debuff that changes nothing", func(s *gamev1.GameContentSpec) { s.Abilities[1].Debuff.Attack, s.Abilities[1].Debuff.Defence = 0, 0 }, "spec.abilities[1].debuff"},
		{"a drop of both a kind and a table", func(s *gamev1.GameContentSpec) { s.Enemies[1].Drops[0].Kind = "gem" }, "spec.enemies[1].drops[0].kind"},
		{"a shared table over 1000 per mille", func(s *gamev1.GameContentSpec) { s.LootTables[0].Drops[0].PerMille = 600 }, "spec.lootTables[0].drops"},
		{"an empty shared table", func(s *gamev1.GameContentSpec) { s.LootTables[0].Drops = nil }, "spec.lootTables[0].drops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc := shippedPack(t, ns, "crypt")
			gc.Name = "broken"
			tc.edit(&gc.Spec)
			err := k8s.Create(ctx, gc)
			if err == nil {
				t.Fatalf("admitted")
			}
			if msg := err.Error(); !containsField(msg, tc.field) {
				t.Errorf("the refusal does not name %s: %v", tc.field, msg)
			} else {
				t.Log(msg)
			}
		})
	}
}

func containsField(msg, field string) bool {
	return strings.Contains(msg, field+":") || strings.Contains(msg, field+" ")
}

// TestAnInvalidPackHoldsItsRoomNamingTheField: what the schema cannot see
// (a loot table naming an item the pack does not define) is the pack's
// Valid=False condition with the field's path; a room whose map names it
// gets no pod, and says which pack and field.
func TestAnInvalidPackHoldsItsRoomNamingTheField(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	gc := shippedPack(t, ns, "crypt")
	gc.Name = "haunted"
	gc.Spec.Enemies[0].Drops[0].Kind = "ectoplasm"
	g.Expect(k8s.Create(ctx, gc)).To(Succeed())
	c := validCondition(ctx, g, ns, "haunted")
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(gamev1.ReasonPackInvalid))
	g.Expect(c.Message).To(ContainSubstring(`spec.enemies[0].drops[0].kind: item "ectoplasm" is not in items`))

	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withContent("haunted")))
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		ready := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(gamev1.ReasonPackInvalid))
		g.Expect(ready.Message).To(ContainSubstring("haunted"))
		g.Expect(ready.Message).To(ContainSubstring("spec.enemies[0].drops[0].kind"))
	}).Should(Succeed())
	g.Consistently(func() error { return k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}) }).ShouldNot(Succeed(), "no pod on an invalid pack")
	g.Eventually(func(g Gomega) {
		room := &gamev1.GameRoom{}
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		cv := meta.FindStatusCondition(room.Status.Conditions, gamev1.ConditionContentValid)
		g.Expect(cv).NotTo(BeNil())
		g.Expect(cv.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cv.Message).To(ContainSubstring("content pack haunted: spec.enemies[0].drops[0].kind"))
	}).Should(Succeed())

	// Fixed, it runs: the pod mounts the pack's revision.
	g.Eventually(func() error {
		gc := &gamev1.GameContent{}
		if err := k8s.Get(ctx, key(ns, "haunted"), gc); err != nil {
			return err
		}
		gc.Spec.Enemies[0].Drops[0].Kind = "bone"
		return k8s.Update(ctx, gc)
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
		g.Expect(pod.Annotations).To(HaveKeyWithValue(annotationContent, "haunted"))
		g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--content-file=" + contentMountPath + "/" + packs.FileKey))
	}).Should(Succeed())
}

// TestThePackConditionNamesWhatTheSchemaCannotSee: what needs the whole
// pack (the loot tables a drop names, their items, a cycle of tables) is
// the pack's Valid=False condition, with the field's path.
func TestThePackConditionNamesWhatTheSchemaCannotSee(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	for i, tc := range []struct {
		name string
		edit func(*gamev1.GameContentSpec)
		want string
	}{
		{"an unknown table", func(s *gamev1.GameContentSpec) { s.Enemies[1].Drops[0].Table = "treasure" },
			`spec.enemies[1].drops[0].table: loot table "treasure" is not in lootTables`},
		{"an unknown item in a shared table", func(s *gamev1.GameContentSpec) { s.LootTables[0].Drops[1].Kind = "ectoplasm" },
			`spec.lootTables[0].drops[1].kind: item "ectoplasm" is not in items`},
		{"a cycle of tables", func(s *gamev1.GameContentSpec) {
			s.LootTables[0].Drops[1] = gamev1.ContentDrop{Table: "deeper", PerMille: 100}
			s.LootTables = append(s.LootTables, gamev1.ContentLootTable{Name: "deeper", Drops: []gamev1.ContentDrop{{Table: "crypt spoils", PerMille: 10}}})
		}, `spec.lootTables[1].drops[0].table: loot table "crypt spoils" rolls itself again: crypt spoils → deeper → crypt spoils`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := wait(t)
			gc := shippedPack(t, ns, "crypt")
			gc.Name = fmt.Sprintf("broken-%d", i)
			tc.edit(&gc.Spec)
			g.Expect(k8s.Create(ctx, gc)).To(Succeed())
			c := validCondition(ctx, g, ns, gc.Name)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring(tc.want))
		})
	}
}

// TestAChangedPackRollsItsMapsByHandover: a new valid revision replaces
// the pods that run the old one beside them (a handover), and an invalid
// edit afterwards rolls nothing: the maps keep the last valid revision.
func TestAChangedPackRollsItsMapsByHandover(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	firstRevision := runningOnWilds(ctx, t, g, ns)

	editPack(ctx, g, ns, "wilds", func(s *gamev1.GameContentSpec) { s.Enemies[0].HP = 60 })
	next := successorPod(ctx, g, ns)
	g.Expect(next.Annotations[annotationContentRevision]).NotTo(Equal(firstRevision))
	g.Expect(next.Annotations[annotationContentRevision]).To(HavePrefix("wilds-"))

	editPack(ctx, g, ns, "wilds", func(s *gamev1.GameContentSpec) { s.BaseSkill = "juggling" })
	g.Expect(validCondition(ctx, g, ns, "wilds").Status).To(Equal(metav1.ConditionFalse))
	g.Consistently(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Handover).NotTo(BeNil())
		g.Expect(mi.Status.Handover.To).To(Equal(next.Name), "the invalid edit starts no other pod")
	}).Should(Succeed())
}

func withContent(name string) roomOption {
	return func(r *gamev1.GameRoom) {
		for i := range r.Spec.Maps {
			r.Spec.Maps[i].Config.Content = name
		}
	}
}

func editPack(ctx context.Context, g Gomega, ns, name string, edit func(*gamev1.GameContentSpec)) {
	g.Eventually(func() error {
		gc := &gamev1.GameContent{}
		if err := k8s.Get(ctx, key(ns, name), gc); err != nil {
			return err
		}
		edit(&gc.Spec)
		return k8s.Update(ctx, gc)
	}).Should(Succeed())
}

// TestTheContentGuideIsTrue: docs/content.md's pack is valid as written,
// and the guide documents every field of the GameContent schema's spec.
func TestTheContentGuideIsTrue(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "content.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(guide), "<!-- docs test: my-crypt -->\n```yaml\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/content.md has no yaml block after <!-- docs test: my-crypt -->")
	}
	gc := &gamev1.GameContent{}
	if err := yaml.UnmarshalStrict([]byte(block), gc); err != nil {
		t.Fatalf("the guide's pack: %v", err)
	}
	gc.Namespace = ns
	g.Expect(k8s.Create(ctx, gc)).To(Succeed())
	c := validCondition(ctx, g, ns, "my-crypt")
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	g.Expect(k8s.Get(ctx, key(ns, "my-crypt"), gc)).To(Succeed())
	g.Expect([]int32{gc.Status.Items, gc.Status.Enemies}).To(Equal([]int32{5, 3}), "the guide's kubectl get pack shows 5 items and 3 enemies")

	crd, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "game.roomkeeper.dev_gamecontents.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema apiextensionsv1.JSONSchemaProps `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(crd, &schema); err != nil {
		t.Fatal(err)
	}
	spec := schema.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, field := range fieldNames(spec) {
		if !strings.Contains(string(guide), "`"+field+"`") {
			t.Errorf("docs/content.md does not document the field %s", field)
		}
	}
}

// fieldNames are the property names anywhere under s.
func fieldNames(s apiextensionsv1.JSONSchemaProps) []string {
	var names []string
	for name, p := range s.Properties {
		names = append(names, name)
		names = append(names, fieldNames(p)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		names = append(names, fieldNames(*s.Items.Schema)...)
	}
	return names
}

// TestARevisionsNameHeldBySomeoneElseIsAConflict: a ConfigMap that is not
// the pack's own under its revision's name is never taken for the pack:
// the pack says NameConflict, and no map mounts it.
func TestARevisionsNameHeldBySomeoneElseIsAConflict(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	wilds, _ := content.Named("wilds")
	encoded, _ := wilds.Encode()
	squatter := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wilds-" + content.Revision(encoded)},
		Data: map[string]string{packs.FileKey: `{"name":"wilds"}`}}
	g.Expect(k8s.Create(ctx, squatter)).To(Succeed())
	g.Expect(k8s.Create(ctx, shippedPack(t, ns, "wilds"))).To(Succeed())
	c := validCondition(ctx, g, ns, "wilds")
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(gamev1.ReasonNameConflict))
	g.Expect(c.Message).To(ContainSubstring(squatter.Name))
	gc := &gamev1.GameContent{}
	g.Expect(k8s.Get(ctx, key(ns, "wilds"), gc)).To(Succeed())
	g.Expect(gc.Status.ConfigMap).To(BeEmpty(), "no revision published")

	// The squatter gone and the pack nudged, the revision is published.
	g.Expect(k8s.Delete(ctx, squatter)).To(Succeed())
	g.Eventually(func() error {
		gc := &gamev1.GameContent{}
		if err := k8s.Get(ctx, key(ns, "wilds"), gc); err != nil {
			return err
		}
		gc.Annotations = map[string]string{"game.roomkeeper.dev/retry": "1"}
		return k8s.Update(ctx, gc)
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		gc := &gamev1.GameContent{}
		g.Expect(k8s.Get(ctx, key(ns, "wilds"), gc)).To(Succeed())
		g.Expect(gc.Status.ConfigMap).To(Equal(squatter.Name))
		g.Expect(meta.IsStatusConditionTrue(gc.Status.Conditions, gamev1.ConditionValid)).To(BeTrue())
	}).Should(Succeed())
}

// TestARunningMapKeepsItsRevisionWhenItsPackIsGone: a room whose map is
// pointed at a pack that does not exist keeps running the revision it
// runs: the new map config replaces the pod by handover, and the new pod
// mounts that same revision; the room says why.
func TestARunningMapKeepsItsRevisionWhenItsPackIsGone(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	revision := runningOnWilds(ctx, t, g, ns)

	editRoom(ctx, g, ns, "demo", withContent("nosuch"))
	g.Eventually(func(g Gomega) {
		room := &gamev1.GameRoom{}
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		cv := meta.FindStatusCondition(room.Status.Conditions, gamev1.ConditionContentValid)
		g.Expect(cv).NotTo(BeNil())
		g.Expect(cv.Reason).To(Equal(gamev1.ReasonPackNotFound))
		g.Expect(cv.Message).To(ContainSubstring("nosuch"))
	}).Should(Succeed())
	next := successorPod(ctx, g, ns)
	g.Expect(next.Annotations[annotationContentRevision]).To(Equal(revision), "the new pod runs the revision the old one ran")
	g.Expect(next.Spec.Containers[0].Args).To(ContainElement("--content-file=" + contentMountPath + "/" + packs.FileKey))
}

// runningOnWilds creates the shipped wilds pack and a room whose town
// runs on it, starts the town's pod and returns the revision it mounts.
func runningOnWilds(ctx context.Context, t *testing.T, g Gomega, ns string) string {
	g.Expect(k8s.Create(ctx, shippedPack(t, ns, "wilds"))).To(Succeed())
	g.Expect(validCondition(ctx, g, ns, "wilds").Status).To(Equal(metav1.ConditionTrue))
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withContent("wilds")))
	currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")
	pod := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
	revision := pod.Annotations[annotationContentRevision]
	g.Expect(revision).To(HavePrefix("wilds-"))
	return revision
}
