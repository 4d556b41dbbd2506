package joinapi

import "github.com/roomkeeper/roomkeeper/internal/protocol"

// The join API's bodies are defined once, in internal/protocol, with the
// Go client's and the room servers' (docs/joinapi.md has them as JSON).
type (
	JoinRequest            = protocol.JoinRequest
	JoinResponse           = protocol.JoinResponse
	Character              = protocol.Character
	CharacterList          = protocol.CharacterList
	CreateCharacterRequest = protocol.CreateCharacterRequest
	CreatePartyRequest     = protocol.CreatePartyRequest
	Party                  = protocol.Party
	DestinationRequest     = protocol.DestinationRequest
	DestinationResponse    = protocol.Destination
	// ErrorBody is the JSON body of every error answer.
	ErrorBody = protocol.APIErrorBody[Code]
)
