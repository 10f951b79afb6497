"""What differs between the systems the app runs on (macOS first): interpreter, login environment,
launchd, logging and the Cocoa bridge. Each module says what it stands in for; docs/macos.md lists them."""
