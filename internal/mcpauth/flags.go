package mcpauth

import (
	"errors"
	"reflect"
	"slices"

	"github.com/harvey-agent/harvey/internal/config"
)

// The flags of `harvey mcp add NAME --url URL` that write a server's oauth:
// block, beside the flows they configure: a client you registered, a
// client ID metadata document, the authorization server you pin, a
// workload's token and your identity provider.

// flags are the OAuth flags; all but --client-credentials take a value.
var flags = []string{"--client-id", "--client-secret", "--client-credentials", "--private-key", "--client-metadata-url",
	"--issuer", "--auth-server-metadata-url", "--workload-token", "--workload-token-command",
	"--idp-issuer", "--idp-client-id", "--idp-client-secret", "--id-token-command"}

// IsFlag reports whether flag is one of the OAuth flags.
func IsFlag(flag string) bool { return slices.Contains(flags, flag) }

// SetFlag sets flag (one of IsFlag's) in o; true: it takes no value.
func SetFlag(o *config.MCPOAuth, flag, val string) bool {
	switch flag {
	case "--client-id":
		o.ClientID = val
	case "--client-secret":
		o.ClientSecret = val
	case "--private-key":
		o.PrivateKey = val
	case "--client-metadata-url":
		o.ClientMetadataURL = val
	case "--issuer":
		o.Issuer = val
	case "--auth-server-metadata-url":
		o.AuthServerMetadataURL = val
	case "--workload-token":
		o.WorkloadToken = val
	case "--workload-token-command":
		o.WorkloadTokenCommand = config.HookArgv{"sh", "-c", val}
	case "--idp-issuer", "--idp-client-id", "--idp-client-secret", "--id-token-command":
		enterpriseFlag(o, flag, val)
	default:
		o.ClientCredentials = true
		return true
	}
	return false
}

func enterpriseFlag(o *config.MCPOAuth, flag, val string) {
	if o.Enterprise == nil {
		o.Enterprise = &config.MCPEnterprise{}
	}
	switch flag {
	case "--idp-issuer":
		o.Enterprise.IdPIssuer = val
	case "--idp-client-id":
		o.Enterprise.IdPClientID = val
	case "--idp-client-secret":
		o.Enterprise.IdPClientSecret = val
	default:
		o.Enterprise.IDTokenCommand = config.HookArgv{"sh", "-c", val}
	}
}

// CheckFlags says what an oauth: block written from flags lacks (nil: no
// OAuth flag was given); withURL: the server was given --url.
func CheckFlags(o *config.MCPOAuth, withURL bool) error {
	switch {
	case o == nil:
		return nil
	case !withURL:
		return errors.New("the OAuth flags go with --url")
	case o.ClientMetadataURL != "" && !reflect.DeepEqual(*o, config.MCPOAuth{Issuer: o.Issuer, AuthServerMetadataURL: o.AuthServerMetadataURL, ClientMetadataURL: o.ClientMetadataURL}):
		return errors.New("--client-metadata-url is a public client's ID: it goes with --issuer alone, not with --client-id or a credential")
	case o.ClientMetadataURL != "":
		return CheckClientMetadataURL(o.ClientMetadataURL)
	case o.ClientID == "" && !reflect.DeepEqual(*o, config.MCPOAuth{Issuer: o.Issuer, AuthServerMetadataURL: o.AuthServerMetadataURL}):
		return errors.New("--client-id names the client a server's OAuth knows you by; the other OAuth flags but --issuer go with it")
	case o.Enterprise != nil && (o.Enterprise.IdPIssuer == "" || o.Enterprise.IdPClientID == ""):
		return errors.New("enterprise-managed authorization needs both --idp-issuer and --idp-client-id")
	}
	return nil
}
