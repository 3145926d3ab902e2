"""Chapter 00, welcome: :mod:`~dlcourse.welcome.widgets` holds the softmax-temperature explorer."""
