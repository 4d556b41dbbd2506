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

// Package v1 contains the game.roomkeeper.dev/v1 API: GameRoom, which a
// platform team writes, and MapInstance, one authoritative map simulation
// that the operator runs as one room-server pod.
// +kubebuilder:object:generate=true
// +groupName=game.roomkeeper.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "game.roomkeeper.dev", Version: "v1"}

	// SchemeBuilder registers this package's types in a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &GameRoom{}, &GameRoomList{}, &MapInstance{}, &MapInstanceList{},
		&GameContent{}, &GameContentList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
