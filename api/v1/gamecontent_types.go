/*
Copyright 2026 The Roomkeeper Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GameContentSpec is a content pack: what lives on a map beyond its shape
// (docs/content.md). The schema catches what one field can say of itself;
// the operator checks the rest (every item a loot table names defined, a
// policy's anchors, skills) and reports it in the Valid condition.
// +kubebuilder:validation:XValidation:rule="has(self.boss) == has(self.key)",message="boss and key go together: a boss guards the room the key opens",fieldPath=".key"
type GameContentSpec struct {
	// player is every player's fighting stats.
	// +required
	Player ContentFighter `json:"player"`

	// enemies are the NPC kinds the map spawns, by weight.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	Enemies []ContentEnemy `json:"enemies"`

	// boss guards a dungeon's boss room; with it, key.
	// +optional
	Boss *ContentEnemy `json:"boss,omitempty"`

	// key is the item kind that opens the boss room's locked doors; it lies
	// in the key room.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Key string `json:"key,omitempty"`

	// groundLoot are the item kinds the map's generated loot spawns are.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	GroundLoot []string `json:"groundLoot"`

	// items define every item kind the pack names.
	// +required
	// +listType=map
	// +listMapKey=kind
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2048
	Items []ContentItem `json:"items"`

	// skills are what characters get better at.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Skills []ContentSkill `json:"skills"`

	// baseSkill is the skill a kill trains when the weapon worn trains none.
	// +required
	// +kubebuilder:validation:MinLength=1
	BaseSkill string `json:"baseSkill"`

	// bag is what a character carries.
	// +required
	Bag ContentBag `json:"bag"`

	// equipCooldown is how long, in seconds, a slot stays locked after an
	// equip or unequip, 0 to 60.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60
	EquipCooldown float64 `json:"equipCooldown,omitempty"`

	// critical are the policies that keep critical items obtainable.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=64
	Critical []ContentCriticalPolicy `json:"critical,omitempty"`

	// resources are the pools abilities cost: mana and stamina.
	// +optional
	Resources *ContentResources `json:"resources,omitempty"`

	// abilities are what players cast (combat.cast).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Abilities []ContentAbility `json:"abilities,omitempty"`

	// lootTables are loot tables shared by name: a drop line of an enemy
	// (or of another table) that names one rolls it in turn. Tables may
	// nest, never in a cycle.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	LootTables []ContentLootTable `json:"lootTables,omitempty"`
}

// ContentLootTable is a named loot table.
type ContentLootTable struct {
	// name names it, for drop lines' table, 1 to 64 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// drops are its lines: one roll picks at most one.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.map(d, d.perMille).sum() <= 1000",message="the drops' chances add up to more than 1000 per mille"
	Drops []ContentDrop `json:"drops"`
}

// ContentResources are the pools every character has.
type ContentResources struct {
	// mana is spent on abilities that cost mana.
	// +optional
	Mana *ContentResource `json:"mana,omitempty"`
	// stamina is spent on abilities that cost stamina.
	// +optional
	Stamina *ContentResource `json:"stamina,omitempty"`
}

// ContentResource is one pool: full on every join, refilled each second.
type ContentResource struct {
	// max is the most it holds, 0 to 10000.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Max int32 `json:"max"`
	// regen is what it gains back each second, 0 to 32767.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32767
	Regen float64 `json:"regen,omitempty"`
}

// ContentAbility is one thing a player casts.
// +kubebuilder:validation:XValidation:rule="self.target == 'enemy' ? ((has(self.damage) || has(self.debuff)) && has(self.range) && !has(self.heal) && !has(self.buff)) : (!has(self.damage) && !has(self.debuff) && (has(self.heal) || has(self.buff)))",message="an enemy ability does damage or a debuff within a range; a self ability heals or buffs",fieldPath=".target"
type ContentAbility struct {
	// name names it, 1 to 64 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// mana and stamina are what a cast costs, at most the pool's max.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Mana int32 `json:"mana,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Stamina int32 `json:"stamina,omitempty"`
	// cooldown is the seconds before it can be cast again, above 0 to 600.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	Cooldown float64 `json:"cooldown"`
	// target is enemy (an NPC within range and sight) or self.
	// +required
	// +kubebuilder:validation:Enum=enemy;self
	Target string `json:"target"`
	// range is how near an enemy target must be, above 0 to 256.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	Range float64 `json:"range,omitempty"`
	// damage is what it does to an enemy, whatever its defence, 1 to 255.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	Damage int32 `json:"damage,omitempty"`
	// heal is the hit points it gives the caster back, 1 to 255.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	Heal int32 `json:"heal,omitempty"`
	// buff strengthens the caster for a while (a self ability).
	// +optional
	Buff *ContentBuff `json:"buff,omitempty"`
	// debuff weakens an enemy target for a while: its attack and defence
	// are taken off the target's, never below 0 (an enemy ability). A new
	// debuff on an enemy replaces the one it had.
	// +optional
	Debuff *ContentBuff `json:"debuff,omitempty"`
}

// ContentBuff changes a fighter's attack and defence for a while: a buff
// adds them to the caster's, a debuff takes them off the target's.
// +kubebuilder:validation:XValidation:rule="(has(self.attack) ? self.attack : 0) + (has(self.defence) ? self.defence : 0) > 0",message="a buff or debuff changes attack or defence"
type ContentBuff struct {
	// attack and defence are added (a buff) or taken off (a debuff) while
	// it lasts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attack int32 `json:"attack,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Defence int32 `json:"defence,omitempty"`
	// duration is how many seconds it lasts, above 0 to 600.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	Duration float64 `json:"duration"`
}

// ContentFighter is what every combatant has.
type ContentFighter struct {
	// hp is the hit points it starts (and respawns) with, 1 to 255.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	HP int32 `json:"hp"`

	// attack and defence make a hit's damage: attack minus the target's
	// defence plus a roll of 0 to roll, at least 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attack int32 `json:"attack,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Defence int32 `json:"defence,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Roll int32 `json:"roll,omitempty"`

	// range is how near (world units) a target must be to be hit, above 0
	// and at most 256.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	Range float64 `json:"range"`

	// cooldown is the seconds between two attacks, above 0 and at most 60.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60
	Cooldown float64 `json:"cooldown"`

	// respawn is how many seconds after death it comes back, 0 to 3600 (0:
	// an enemy that stays dead).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	Respawn float64 `json:"respawn,omitempty"`
}

// ContentEnemy is one kind of NPC.
// +kubebuilder:validation:XValidation:rule="!has(self.drops) || self.drops.map(d, d.perMille).sum() <= 1000",message="the drops' chances add up to more than 1000 per mille",fieldPath=".drops"
// +kubebuilder:validation:XValidation:rule="(has(self.leashRadius) ? self.leashRadius : 0.0) >= (has(self.aggroRadius) ? self.aggroRadius : 0.0)",message="leashRadius must be at least aggroRadius",fieldPath=".leashRadius"
type ContentEnemy struct {
	// name names the kind.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	ContentFighter `json:",inline"`

	// hostile enemies attack the nearest player within aggroRadius;
	// others fight only whoever attacked them.
	// +optional
	Hostile bool `json:"hostile,omitempty"`

	// aggroRadius is how near a player must be to be chased, 0 to 64.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	AggroRadius float64 `json:"aggroRadius,omitempty"`

	// leashRadius is how far from its spawn it follows a target, at least
	// aggroRadius.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LeashRadius float64 `json:"leashRadius,omitempty"`

	// speed is how fast it walks, world units per second, above 0 and at
	// most 256.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	Speed float64 `json:"speed"`

	// weight is its share of the map's NPC spawns, at least 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	Weight int32 `json:"weight"`

	// drops is its loot table: one roll per kill picks at most one.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Drops []ContentDrop `json:"drops,omitempty"`

	// phases change a boss's fighting as its hit points fall, in order of
	// falling thresholds.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Phases []ContentPhase `json:"phases,omitempty"`

	// xp is the experience a kill gives the killer's trained skill.
	// +optional
	// +kubebuilder:validation:Minimum=0
	XP int32 `json:"xp,omitempty"`
}

// ContentDrop is one line of a loot table: an item kind, or a shared
// loot table rolled in turn.
// +kubebuilder:validation:XValidation:rule="has(self.kind) != has(self.table)",message="a drop names an item kind or a loot table, one of them",fieldPath=".kind"
type ContentDrop struct {
	// kind is the item kind dropped: one of the pack's items.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Kind string `json:"kind,omitempty"`

	// table names one of the pack's lootTables, rolled when this line is
	// picked.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Table string `json:"table,omitempty"`

	// perMille is its chance, in thousandths, 1 to 1000.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	PerMille int32 `json:"perMille"`
}

// ContentPhase is a stage of a boss fight.
type ContentPhase struct {
	// belowPercent is the share of its full hit points at or under which
	// the boss fights so, 1 to 99, falling from phase to phase.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	BelowPercent int32 `json:"belowPercent"`

	// attack replaces the boss's attack in this phase.
	// +required
	// +kubebuilder:validation:Minimum=0
	Attack int32 `json:"attack"`

	// cooldown replaces its cooldown, above 0 and at most 60 seconds.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60
	Cooldown float64 `json:"cooldown"`
}

// ContentSlot is where on a character an item is worn.
// +kubebuilder:validation:Enum=head;chest;hands;legs;feet;weapon;offhand
type ContentSlot string

// ContentItem is one kind of item.
// +kubebuilder:validation:XValidation:rule="!(has(self.stackable) && self.stackable && has(self.slots) && size(self.slots) > 0)",message="an item worn in a slot cannot stack",fieldPath=".stackable"
// +kubebuilder:validation:XValidation:rule="!(has(self.use) && has(self.slots) && size(self.slots) > 0)",message="an item worn in a slot is not used up",fieldPath=".use"
type ContentItem struct {
	// kind names it: loot tables, ground loot and the key name kinds.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Kind string `json:"kind"`

	// slots are where it can be worn; none: it is only carried.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	Slots []ContentSlot `json:"slots,omitempty"`

	// weight counts against the bag's maxWeight, 0 to 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight float64 `json:"weight,omitempty"`

	// attack and defence are added to the wearer's while it is worn.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attack int32 `json:"attack,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Defence int32 `json:"defence,omitempty"`

	// requires is the skill level needed to wear it.
	// +optional
	Requires *ContentSkillRequirement `json:"requires,omitempty"`

	// trains is the skill a kill trains while it is the weapon worn;
	// unset, the pack's baseSkill.
	// +optional
	Trains string `json:"trains,omitempty"`

	// stackable items of one kind share a bag slot.
	// +optional
	Stackable bool `json:"stackable,omitempty"`

	// use is what using the item does (a consumable: inventory.use uses it
	// up); unset, it cannot be used.
	// +optional
	Use *ContentUse `json:"use,omitempty"`
}

// ContentUse is what a consumable does when used.
type ContentUse struct {
	// heal is the hit points it gives back, 1 to 255, up to the user's
	// full hit points.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	Heal int32 `json:"heal"`
}

// ContentSkillRequirement is a skill level an item asks of its wearer.
type ContentSkillRequirement struct {
	// skill is one of the pack's skills.
	// +required
	// +kubebuilder:validation:MinLength=1
	Skill string `json:"skill"`

	// level is at least 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	Level int32 `json:"level"`
}

// ContentSkill is a skill that rises by level as kills give it experience.
// +kubebuilder:validation:XValidation:rule="self.levels.all(l, l > 0)",message="levels must be above 0 (and rise)",fieldPath=".levels"
type ContentSkill struct {
	// name names the skill.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// levels are the experience needed for level 2, 3, ...: rising.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Levels []int32 `json:"levels"`
}

// ContentBag is what a character can carry.
type ContentBag struct {
	// capacity is how many bag slots it has, 1 to 64.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Capacity int32 `json:"capacity"`

	// maxWeight is the most a character carries, worn items included.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	MaxWeight float64 `json:"maxWeight"`

	// encumberedAt is the weight above which a character is slowed, 0 to
	// maxWeight.
	// +required
	// +kubebuilder:validation:Minimum=0
	EncumberedAt float64 `json:"encumberedAt"`

	// encumberedSpeed is the fraction of full speed an encumbered
	// character walks at, above 0 and at most 1.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	EncumberedSpeed float64 `json:"encumberedSpeed"`
}

// ContentCriticalPolicy keeps a critical item kind obtainable.
// +kubebuilder:validation:XValidation:rule="self.type == 'instance_quota' ? (has(self.quota) && self.quota >= 1 && self.quota <= size(self.anchors)) : !has(self.quota)",message="an instance_quota policy keeps 1 to as many items as it has anchors; the others have no quota",fieldPath=".quota"
type ContentCriticalPolicy struct {
	// kind is the item kind the policy keeps: one of the pack's items.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Kind string `json:"kind"`

	// type is unique_persistent, regenerative_unique or instance_quota.
	// +required
	// +kubebuilder:validation:Enum=unique_persistent;regenerative_unique;instance_quota
	Type string `json:"type"`

	// anchors are where recovered items go, the first free one first.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Anchors []ContentAnchor `json:"anchors"`

	// cooldownTicks is how long an item must stay lost before it is
	// recovered, in ticks.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CooldownTicks int64 `json:"cooldownTicks,omitempty"`

	// questGate names the quest phase that must be reached before the
	// item is recovered: keyRoomCleared or bossRoomCleared.
	// +optional
	// +kubebuilder:validation:Enum=keyRoomCleared;bossRoomCleared
	QuestGate string `json:"questGate,omitempty"`

	// offlineTimeout is how many seconds a character may hold the item
	// while offline before it is taken back; 0 never takes it back.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OfflineTimeout float64 `json:"offlineTimeout,omitempty"`

	// quota is how many instance_quota items are kept available.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Quota int32 `json:"quota,omitempty"`
}

// ContentAnchor is where a critical item is put back: the middle of the
// map room with that role, or the point x, y.
type ContentAnchor struct {
	// room is a map room's role: keyRoom.
	// +optional
	// +kubebuilder:validation:Enum=keyRoom
	Room string `json:"room,omitempty"`

	// x and y are a point on the map.
	// +optional
	// +kubebuilder:validation:Minimum=0
	X float64 `json:"x,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Y float64 `json:"y,omitempty"`
}

// GameContentStatus is the operator's verdict on a pack.
type GameContentStatus struct {
	// revision names the valid pack's content (the first 16 hex digits of
	// the SHA-256 of its JSON form); maps run the revision they were
	// started with, and a new one rolls them.
	// +optional
	Revision string `json:"revision,omitempty"`

	// configMap holds the valid revision as the map pods read it.
	// +optional
	ConfigMap string `json:"configMap,omitempty"`

	// items and enemies count the valid revision's kinds.
	// +optional
	Items int32 `json:"items,omitempty"`
	// +optional
	Enemies int32 `json:"enemies,omitempty"`

	// conditions are Valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pack,categories=roomkeeper
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.items`
// +kubebuilder:printcolumn:name="Enemies",type=integer,JSONPath=`.status.enemies`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="metadata.name must be at most 40 characters: a revision's ConfigMap is <name>-<revision>"

// GameContent is a content pack that maps of the rooms in its namespace
// name in spec.maps[].config.content.
type GameContent struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the pack.
	// +required
	Spec GameContentSpec `json:"spec"`

	// status is the operator's verdict.
	// +optional
	Status GameContentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GameContentList contains a list of GameContent.
type GameContentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GameContent `json:"items"`
}
