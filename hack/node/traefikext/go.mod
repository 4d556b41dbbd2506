// Traefik's extension point for its dynamic configuration, as its
// open-source build leaves it: empty. Traefik's go.mod points this module
// at a directory its module zip lacks, so hack/node.sh points it here.
module github.com/traefik/traefik/dynamic/ext

go 1.24.0
