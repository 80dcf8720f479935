package mcpauth

import (
	"errors"
	"net/url"
)

// CheckClientMetadataURL says what is wrong with a client ID metadata
// document's URL (oauth.client_metadata_url, `mcp add
// --client-metadata-url`): the draft (draft-ietf-oauth-client-id-metadata-
// document §3) makes the URL itself the client ID, so it must be https
// with a path, and carry no fragment and no user info. The SDK checks only
// the scheme and path, at login; this says it when the server is added.
func CheckClientMetadataURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "":
		return errors.New("--client-metadata-url takes the https URL your client ID metadata document is published at")
	case u.Path == "" || u.Path == "/":
		return errors.New("--client-metadata-url names the document itself: a path after the host (https://example.com/harvey.json)")
	case u.Fragment != "" || u.RawFragment != "" || u.User != nil:
		return errors.New("--client-metadata-url is your client ID, so it carries no fragment and no user name")
	}
	return nil
}
