"""Task sources: one module per publisher's format (read a folder or a row into a `Task`,
its image, its hidden files, its grader), and the Harbor tables they share. A source
reads; it never runs anything (no image pulled, no sandbox made).
"""
