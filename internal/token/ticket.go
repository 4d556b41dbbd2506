package token

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Ticket types, the value of the typ claim.
const (
	// TypeJoin is a ticket the join API hands a player for its first
	// connection to a room.
	TypeJoin = "join"
	// TypeTransfer is a token a source map mints for a character that walks
	// through a portal into another map (xfr names the transfer), or that
	// returns to the source when the destination could not take it.
	TypeTransfer = "transfer"
	// TypeDestination authenticates a map pod asking the manager's join API
	// where a portal leads (map is the destination map's name, from the
	// asking MapInstance); it never admits a player anywhere.
	TypeDestination = "destination"
	// TypeResume brings a player back to its seat after its connection
	// dropped: on the pod that served it, or on the pod that replaced it
	// (after a crash or a drain), which any pod of the map can verify with
	// the room's key. sid names the seat, gen the seat's attachment (the
	// map refuses tokens of an attachment already resumed) and ep the
	// character's authority lease when it was issued (a lease claimed
	// since, by a new join or a resume elsewhere, ends the session).
	TypeResume = "resume"
	// TypeParty proves membership of a party (pty): the join API signs
	// one for the party's leader when it creates the party (rol
	// RoleLeader) and one per invitation the leader asks for (RoleMember).
	// A join that names a party needs one; it names no character and no
	// map, so it never admits a player anywhere itself.
	TypeParty = "party"
	// TypeAdmin carries one command of the manager's admin API to one
	// map's pod (map; sub is the Kubernetes user who asked); it never
	// admits a player anywhere.
	TypeAdmin = "admin"
)

// AdminCharacter is the chr of every admin ticket: it acts for no
// character.
const AdminCharacter = "-admin-"

// Roles of a party token, the value of the rol claim.
const (
	// RoleLeader is the party's creator: it may invite members.
	RoleLeader = "leader"
	// RoleMember joins the party; it cannot invite.
	RoleMember = "member"
)

// DefaultLeeway is how long past exp a Verifier still accepts a ticket. The
// manager that signs and the pod that verifies read different clocks, and a
// ticket lives only seconds, so a little skew must not refuse it.
const DefaultLeeway = 2 * time.Second

// maxClockSkew is how far in the future a ticket's iat may lie: the
// clocks of the manager that signs and the pod that verifies may differ a
// little, never by this much.
const maxClockSkew = time.Minute

// maxTicketBytes bounds what Verify parses. A real ticket is a few hundred
// bytes; anything far longer is refused before base64 and JSON decoding spend
// time and memory on it.
const maxTicketBytes = 4096

// idBytes is the size of a ticket id: 128 random bits never repeat in practice,
// which is what the replay guard relies on.
const idBytes = 16

// Errors Verify returns, for errors.Is. Callers map them to the protocol error
// codes named on each.
var (
	// ErrMalformed means the ticket is not one this room issued for this use:
	// not a JWT, bad claims, unknown kid, bad signature, wrong algorithm, wrong
	// room or wrong type. Protocol code "unauthorized".
	ErrMalformed = errors.New("token: invalid ticket")
	// ErrExpired means a correctly signed ticket is past exp plus the leeway.
	// Protocol code "token_expired".
	ErrExpired = errors.New("token: ticket expired")
	// ErrWrongMap means a valid ticket names another map of the room.
	// Protocol code "wrong_map".
	ErrWrongMap = errors.New("token: ticket is for another map")
	// ErrReplayed means the ticket's jti was consumed before; a ReplayGuard
	// returns it. Protocol code "token_replayed".
	ErrReplayed = errors.New("token: ticket already used")
)

// errNoExpectation refuses a Verify call that does not say which room and
// map it is for (one map, or AnyMap, not both): such a verifier would
// accept tickets for any map by mistake.
var errNoExpectation = errors.New("token: Expect needs Room and Map")

// Claims are the claims of a ticket (docs/design.md section 3).
type Claims struct {
	// ID is the jti, the id a ReplayGuard records to make the ticket single-use.
	ID string
	// Type is the typ: TypeJoin or TypeTransfer.
	Type string
	// Subject is the sub: the userId derived from the player's authKey.
	Subject string
	// Character is the chr: the character the player plays with this ticket.
	Character string
	// Room is the GameRoom the ticket belongs to.
	Room string
	// Map is the target MapInstance name.
	Map string
	// From is the source map of a transfer; empty for a join.
	From string
	// Transfer is the xfr: the transfer a transfer token belongs to.
	Transfer string
	// Party is the pty: the party whose members share an instanced map;
	// optional.
	Party string
	// Address is the adr of a destination request: a hash of the
	// player's network address (IPv4 or IPv6 /64), so the join API can
	// budget what one address starts; optional.
	Address string
	// Role is the rol of a party token: RoleLeader or RoleMember.
	Role string
	// Session is the sid of a resume token: the seat it resumes.
	Session string
	// Generation is the gen of a resume token: the seat's attachment it
	// was issued for (0 for the first connection, one more per resume).
	Generation uint32
	// Epoch is the ep of a resume token: the character's lease epoch when
	// it was issued; 0 for a guest, who holds no lease.
	Epoch int64
	// IssuedAt is the iat, whole seconds.
	IssuedAt time.Time
	// ExpiresAt is the exp, whole seconds.
	ExpiresAt time.Time
}

// problem says what makes c unfit to be a ticket, or "" when nothing does.
// Sign and Verify share it so that nothing is signed that would not verify.
func (c Claims) problem() string {
	switch {
	case c.ID == "":
		return "jti is empty"
	case c.Subject == "":
		return "sub is empty"
	case c.Room == "":
		return "room is empty"
	case c.Type == TypeParty:
		return c.partyProblem()
	case c.Character == "":
		return "chr is empty"
	case c.Map == "":
		return "map is empty"
	case !validID(c.ID) || !validID(c.Subject) || !validID(c.Character) || !validID(c.Transfer) || !validID(c.Party) || !validID(c.Session) || !validID(c.Address):
		return "an id is longer than 128 bytes or holds control characters"
	case c.IssuedAt.IsZero() || c.ExpiresAt.IsZero():
		return "iat or exp is missing"
	case !c.ExpiresAt.After(c.IssuedAt):
		return "exp is not after iat"
	}
	if c.Role != "" {
		return "only a party token has rol"
	}
	if c.Type != TypeResume && (c.Session != "" || c.Generation != 0 || c.Epoch != 0) {
		return "only a resume token has sid, gen or ep"
	}
	if c.Type != TypeDestination && c.Address != "" {
		return "only a destination request has adr"
	}
	switch c.Type {
	case TypeJoin:
		if c.From != "" || c.Transfer != "" {
			return "a join ticket has from or xfr"
		}
	case TypeResume:
		if c.From != "" || c.Transfer != "" || c.Session == "" || c.Epoch < 0 {
			return "a resume token needs sid and ep >= 0, and no from or xfr"
		}
	case TypeTransfer:
		if c.From == "" || c.Transfer == "" {
			return "a transfer token needs from and xfr"
		}
	case TypeDestination:
		if c.From == "" || c.Transfer != "" {
			return "a destination request needs from and no xfr"
		}
	case TypeAdmin:
		if c.From != "" || c.Transfer != "" || c.Character != AdminCharacter {
			return "an admin ticket has chr " + AdminCharacter + " and no from or xfr"
		}
	default:
		return "typ is not join, transfer, destination, resume, party or admin"
	}
	return ""
}

// partyProblem is problem for a party token: a party and a role, the
// room, and none of the claims that would place a player anywhere.
func (c Claims) partyProblem() string {
	switch {
	case c.Party == "" || !validID(c.Party) || !validID(c.Subject) || !validID(c.ID):
		return "a party token needs a valid pty"
	case c.Role != RoleLeader && c.Role != RoleMember:
		return "a party token's rol is leader or member"
	case c.Character != "" || c.Map != "" || c.From != "" || c.Transfer != "" || c.Address != "" ||
		c.Session != "" || c.Generation != 0 || c.Epoch != 0:
		return "a party token names no character, map, transfer, address or seat"
	case c.IssuedAt.IsZero() || c.ExpiresAt.IsZero():
		return "iat or exp is missing"
	case !c.ExpiresAt.After(c.IssuedAt):
		return "exp is not after iat"
	}
	return ""
}

// maxIDBytes bounds every id claim.
const maxIDBytes = 128

// validID refuses ids no part of Roomkeeper makes: overlong, or holding
// control characters (a NUL byte, say) that would reach logs and SQL.
func validID(s string) bool {
	if len(s) > maxIDBytes {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// wireClaims is the JWT payload. It implements jwt.Claims itself instead of
// embedding jwt.RegisteredClaims so that the payload holds exactly the claims
// of docs/design.md section 3 and nothing (aud, nbf, iss) is silently accepted.
type wireClaims struct {
	ID        string           `json:"jti"`
	Type      string           `json:"typ"`
	Subject   string           `json:"sub"`
	Character string           `json:"chr"`
	Room      string           `json:"room"`
	Map       string           `json:"map"`
	From      string           `json:"from,omitempty"`
	Transfer  string           `json:"xfr,omitempty"`
	Party     string           `json:"pty,omitempty"`
	Address   string           `json:"adr,omitempty"`
	Role      string           `json:"rol,omitempty"`
	Session   string           `json:"sid,omitempty"`
	Gen       uint32           `json:"gen,omitempty"`
	Epoch     int64            `json:"ep,omitempty"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
	ExpiresAt *jwt.NumericDate `json:"exp"`
	// NotBefore is never signed here; a ticket that carries one is held
	// to it.
	NotBefore *jwt.NumericDate `json:"nbf,omitempty"`
}

func toWire(c Claims) wireClaims {
	return wireClaims{
		ID: c.ID, Type: c.Type, Subject: c.Subject, Character: c.Character,
		Room: c.Room, Map: c.Map, From: c.From, Transfer: c.Transfer, Party: c.Party, Address: c.Address, Role: c.Role,
		Session: c.Session, Gen: c.Generation, Epoch: c.Epoch,
		IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
		ExpiresAt: jwt.NewNumericDate(c.ExpiresAt),
	}
}

func (w *wireClaims) claims() Claims {
	return Claims{
		ID: w.ID, Type: w.Type, Subject: w.Subject, Character: w.Character,
		Room: w.Room, Map: w.Map, From: w.From, Transfer: w.Transfer, Party: w.Party, Address: w.Address, Role: w.Role,
		Session: w.Session, Generation: w.Gen, Epoch: w.Epoch,
		IssuedAt:  dateOf(w.IssuedAt),
		ExpiresAt: dateOf(w.ExpiresAt),
	}
}

// dateOf returns d in UTC so that claims compare equal whichever time zone
// the process runs in; a missing date is the zero time.
func dateOf(d *jwt.NumericDate) time.Time {
	if d == nil {
		return time.Time{}
	}
	return d.UTC()
}

// GetExpirationTime implements jwt.Claims.
func (w *wireClaims) GetExpirationTime() (*jwt.NumericDate, error) { return w.ExpiresAt, nil }

// GetIssuedAt implements jwt.Claims.
func (w *wireClaims) GetIssuedAt() (*jwt.NumericDate, error) { return w.IssuedAt, nil }

// GetNotBefore implements jwt.Claims.
func (w *wireClaims) GetNotBefore() (*jwt.NumericDate, error) { return w.NotBefore, nil }

// GetIssuer implements jwt.Claims; tickets have no iss.
func (w *wireClaims) GetIssuer() (string, error) { return "", nil }

// GetSubject implements jwt.Claims.
func (w *wireClaims) GetSubject() (string, error) { return w.Subject, nil }

// GetAudience implements jwt.Claims; tickets have no aud.
func (w *wireClaims) GetAudience() (jwt.ClaimStrings, error) { return nil, nil }

// Signer signs tickets with its key source's current key (HS256) and names
// that key in the JWT kid header, so verifiers can pick current or previous.
// It is safe for concurrent use.
type Signer struct {
	keys  KeySource
	clock func() time.Time
}

// NewSigner returns a Signer over keys. A nil clock means time.Now; tests
// inject one so that expiry is exact.
func NewSigner(keys KeySource, clock func() time.Time) *Signer {
	return &Signer{keys: keys, clock: orNow(clock)}
}

// Sign fills ID (random 128 bits, base64url) when it is empty, sets IssuedAt
// to now and ExpiresAt to now+ttl, and returns the compact JWT together with
// the claims as signed. JWT times are whole seconds, so both are truncated to
// the second and ttl must be at least one.
func (s *Signer) Sign(c Claims, ttl time.Duration) (string, Claims, error) {
	if ttl < time.Second {
		return "", Claims{}, fmt.Errorf("token: ttl %v is shorter than a second", ttl)
	}
	if c.ID == "" {
		id, err := newID()
		if err != nil {
			return "", Claims{}, err
		}
		c.ID = id
	}
	now := s.clock().UTC().Truncate(time.Second)
	c.IssuedAt, c.ExpiresAt = now, now.Add(ttl).Truncate(time.Second)
	if p := c.problem(); p != "" {
		return "", Claims{}, errors.New("token: cannot sign: " + p)
	}
	raw, err := signWith(s.keys.Keys().Current, toWire(c))
	if err != nil {
		return "", Claims{}, err
	}
	return raw, c, nil
}

func signWith(key Key, claims wireClaims) (string, error) {
	if key.ID == "" || len(key.Secret) < keyBytes {
		return "", errors.New("token: no usable current key")
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, &claims)
	t.Header["kid"] = key.ID
	raw, err := t.SignedString(key.Secret)
	if err != nil {
		return "", fmt.Errorf("token: signing: %w", err)
	}
	return raw, nil
}

func newID() (string, error) {
	b := make([]byte, idBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: generating jti: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func orNow(clock func() time.Time) func() time.Time {
	if clock == nil {
		return time.Now
	}
	return clock
}

// Expect is what a Verifier requires of a ticket. Room and Map are required;
// empty Types accepts either type.
type Expect struct {
	// Room is the GameRoom this process serves; another room's ticket is
	// ErrMalformed.
	Room string
	// Map is the MapInstance this process runs; a ticket of the same room for
	// another map is ErrWrongMap.
	Map string
	// AnyMap accepts a ticket of the room for any map, in place of Map:
	// for the join API, which locates the map a resume token names.
	AnyMap bool
	// Types lists the accepted typ values (TypeJoin, TypeTransfer); empty
	// accepts either.
	Types []string
	// MaxLifetime refuses a ticket whose exp is further than this from
	// its iat: the longest a ticket of this kind is ever signed for. A
	// stolen signing key still cannot mint tickets for years. Zero is
	// DefaultMaxLifetime: every token has a maximum lifetime.
	MaxLifetime time.Duration
}

// DefaultMaxLifetime bounds the lifetime of a token whose Expect sets no
// MaxLifetime: far longer than any token this project signs (seconds to
// minutes), far shorter than years.
const DefaultMaxLifetime = time.Hour

// Verifier checks a ticket's signature (current or previous key, chosen by
// kid), algorithm (HS256 only), expiry (with a leeway), room, map and type.
// It does not make a ticket single-use: that is a ReplayGuard's job, after
// Verify succeeds. It is safe for concurrent use.
type Verifier struct {
	keys   KeySource
	clock  func() time.Time
	leeway time.Duration
	parser *jwt.Parser
}

// NewVerifier returns a Verifier over keys with DefaultLeeway. A nil clock
// means time.Now.
func NewVerifier(keys KeySource, clock func() time.Time) *Verifier {
	return newVerifier(keys, orNow(clock), DefaultLeeway)
}

// WithLeeway returns a copy of v that accepts tickets up to leeway past exp.
// Keep it well under a minute: MemoryReplayGuard remembers a jti only that
// long past exp, and a ticket must not verify after its id is forgotten.
func (v *Verifier) WithLeeway(leeway time.Duration) *Verifier {
	return newVerifier(v.keys, v.clock, leeway)
}

func newVerifier(keys KeySource, clock func() time.Time, leeway time.Duration) *Verifier {
	v := &Verifier{keys: keys, clock: clock, leeway: leeway}
	v.parser = jwt.NewParser(
		// Only HS256: "none", HS512 and every asymmetric algorithm are refused
		// before the key is even looked up, which closes alg confusion.
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(clock),
		// Strict base64 so that a signature with altered padding bits does
		// not decode to the same bytes and verify.
		jwt.WithStrictDecoding(),
	)
	return v
}

// Verify checks raw against want and returns its claims. Errors wrap
// ErrMalformed, ErrExpired or ErrWrongMap; the text never holds key material
// or the ticket itself, so it is safe to log.
func (v *Verifier) Verify(raw string, want Expect) (Claims, error) {
	if want.Room == "" || (want.Map == "") == !want.AnyMap {
		return Claims{}, errNoExpectation
	}
	if len(raw) > maxTicketBytes {
		return Claims{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxTicketBytes)
	}
	var w wireClaims
	if _, err := v.parser.ParseWithClaims(raw, &w, v.key); err != nil {
		return Claims{}, classify(err)
	}
	c := w.claims()
	if p := c.problem(); p != "" {
		return Claims{}, fmt.Errorf("%w: %s", ErrMalformed, p)
	}
	if err := want.check(c); err != nil {
		return Claims{}, err
	}
	if c.IssuedAt.After(v.clock().Add(maxClockSkew)) {
		return Claims{}, fmt.Errorf("%w: issued in the future", ErrMalformed)
	}
	if lifetime := cmp.Or(want.MaxLifetime, DefaultMaxLifetime); c.ExpiresAt.Sub(c.IssuedAt) > lifetime {
		return Claims{}, fmt.Errorf("%w: valid for %s, longer than this room signs", ErrMalformed, c.ExpiresAt.Sub(c.IssuedAt))
	}
	return c, nil
}

// classify maps a jwt parse error onto this package's errors. The jwt library
// reports expiry only after the signature verified, so an expired forgery is
// still ErrMalformed.
func classify(err error) error {
	if errors.Is(err, jwt.ErrTokenExpired) {
		return ErrExpired
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// check applies want to verified claims. Room and type come before map so
// that only a ticket this room issued for this use is told "wrong map".
func (want Expect) check(c Claims) error {
	if c.Room != want.Room {
		return fmt.Errorf("%w: ticket is for another room", ErrMalformed)
	}
	if len(want.Types) > 0 && !slices.Contains(want.Types, c.Type) {
		return fmt.Errorf("%w: a %s ticket is not accepted here", ErrMalformed, c.Type)
	}
	if !want.AnyMap && c.Map != want.Map {
		return fmt.Errorf("%w: ticket is for map %q", ErrWrongMap, c.Map)
	}
	return nil
}

var (
	errNoKID      = errors.New("no kid header")
	errUnknownKID = errors.New("unknown kid")
)

// key is the jwt.Keyfunc: it looks the kid up in the key set as it is now, so
// a reload or rotation applies to the next ticket without a restart.
func (v *Verifier) key(t *jwt.Token) (any, error) {
	// WithValidMethods has already refused other algorithms; checking again
	// here keeps an HMAC secret from ever meeting another algorithm.
	if t.Method != jwt.SigningMethodHS256 {
		return nil, fmt.Errorf("algorithm %s is not accepted", t.Method.Alg())
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errNoKID
	}
	ks := v.keys.Keys()
	for _, k := range []*Key{&ks.Current, ks.Previous} {
		// A short secret is refused even when its id matches: an empty key
		// in a broken key set would let anyone sign.
		if k != nil && k.ID == kid && len(k.Secret) >= keyBytes {
			return k.Secret, nil
		}
	}
	return nil, errUnknownKID
}
