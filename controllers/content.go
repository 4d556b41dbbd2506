package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/packs"
)

// A room's maps run the content packs their configs name
// (internal/packs). A GameContent's change wakes the rooms that use it
// (their ContentValid condition) and their maps (a new revision rolls
// them by handover).

// packNames are the packs the room's maps name, each once, in map order.
func packNames(room *gamev1.GameRoom) []string {
	var names []string
	for _, m := range room.Spec.Maps {
		if n := m.Config.Content; n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// roomsUsingPack are the rooms of the pack's namespace whose maps name it.
func roomsUsingPack(ctx context.Context, c client.Reader, pack client.Object) []gamev1.GameRoom {
	var rooms gamev1.GameRoomList
	if err := c.List(ctx, &rooms, client.InNamespace(pack.GetNamespace())); err != nil {
		return nil
	}
	return slices.DeleteFunc(rooms.Items, func(room gamev1.GameRoom) bool {
		return !slices.Contains(packNames(&room), pack.GetName())
	})
}

// roomsOfPack wakes the rooms that use a GameContent.
func roomsOfPack(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, room := range roomsUsingPack(ctx, c, obj) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&room)})
		}
		return out
	})
}

// mapsOfPack wakes the maps of the rooms that use a GameContent.
func mapsOfPack(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, room := range roomsUsingPack(ctx, c, obj) {
			var maps gamev1.MapInstanceList
			if err := c.List(ctx, &maps, client.InNamespace(room.Namespace), client.MatchingFields{indexRoomName: room.Name}); err != nil {
				continue
			}
			for i := range maps.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&maps.Items[i])})
			}
		}
		return out
	})
}

// setContentCondition sets the room's ContentValid: False naming each pack
// that is missing or invalid and its first bad field.
func setContentCondition(ctx context.Context, c client.Reader, room *gamev1.GameRoom, status *gamev1.GameRoomStatus, now metav1.Time) error {
	var problems []string
	reason := gamev1.ReasonPackInvalid
	for _, name := range packNames(room) {
		src, err := packs.Find(ctx, c, room.Namespace, name)
		switch {
		case err != nil && !isNotFoundPack(err):
			return err
		case err != nil:
			problems = append(problems, err.Error())
			reason = gamev1.ReasonPackNotFound
		case src.Problem() != "":
			problems = append(problems, fmt.Sprintf("content pack %s: %s", name, firstLine(src.Problem())))
		}
	}
	if len(problems) == 0 {
		setCondition(&status.Conditions, gamev1.ConditionContentValid, metav1.ConditionTrue, gamev1.ReasonPackValid,
			"every map's content pack is valid", room.Generation, now)
		return nil
	}
	setCondition(&status.Conditions, gamev1.ConditionContentValid, metav1.ConditionFalse, reason,
		truncate(strings.Join(problems, "\n"), maxConditionMessage), room.Generation, now)
	return nil
}

func isNotFoundPack(err error) bool { return errors.Is(err, packs.ErrNotFound) }
