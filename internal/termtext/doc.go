// Package termtext is the text Harvey shows people and models, made safe
// and short.
//
// Sanitize and Writer are the one sanitizer for the terminal: every byte
// Harvey prints passes through a Writer, which lets only Harvey's own
// colour and erase-line sequences through and shows every other control
// sequence (an OSC 52 clipboard write, a title, a cursor move), bidi
// override, zero-width and tag character escaped, never executed.
// QuotePath shows a path a refusal or a result names. The rest are the
// words every layer uses: FirstLine, OneLine and Flat forms, Plural
// counts, Clip and ClipList cuts that say they cut, Kilo sizes, QuoteArgv
// (an argv as a shell would need it), IsYes (the answer to [y/N]), Wrap
// and WrapHanging, and WordWrap (streamed prose broken between words at the
// terminal's width).
//
// It imports nothing of Harvey's.
package termtext
