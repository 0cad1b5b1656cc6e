import sys

from invoicer.models import InvoiceError, load_invoice
from invoicer.render import render

if len(sys.argv) != 2:
    sys.exit("usage: python3 -m invoicer INVOICE.json")
try:
    print(render(load_invoice(sys.argv[1])), end="")
except (OSError, InvoiceError) as error:
    sys.exit(f"invoicer: {sys.argv[1]}: {error}")
