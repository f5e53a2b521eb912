"""Readers for formats whose text is not the file itself (PDF, HTML, Office, OpenDocument, EPUB,
mail, spreadsheets and data files). Each turns bytes into an `Extracted` through `TextBuilder`;
`documents.extract.extract_file` dispatches to them by file type."""
