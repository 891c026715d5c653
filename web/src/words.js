// Amounts and states in words, as a person reads them: "€1,450.50 allocated" rather than
// "1,450.5 EUR (ALLOCATED)", "On hold" rather than "SUSPENDED". Money keeps the currency's minor
// units (two for EUR, none for JPY, three for KWD), as Intl knows them.

const AMOUNT_TYPES = { 'N/A': 'no amount', ALLOCATED: 'allocated', DISBURSED: 'disbursed' };

/** `amount` (a decimal string) in `currency` with its minor units; null without an amount. */
export function moneyInWords(amount, currency) {
  if (amount == null || amount === '') return null;
  const value = Number(amount);
  if (!Number.isFinite(value)) return `${amount} ${currency || ''}`.trim();
  if (!currency) return value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(value);
  } catch {
    return `${value.toFixed(2)} ${currency}`; // a code Intl does not know: two decimals and the code
  }
}

/** An item's amount as its card and page show it ("€1,450.50"); null when it has none. */
export function itemAmount(item) {
  return item.amountType === 'N/A' ? null : moneyInWords(item.amount, item.currency);
}

/** "allocated", "disbursed" or "no amount". */
export function amountTypeWords(type) {
  return AMOUNT_TYPES[type] ?? String(type || '').toLowerCase();
}

const CASE_STATUS = { ACTIVE: 'Running', SUSPENDED: 'On hold', COMPLETED: 'Done', CANCELED: 'Canceled' };

/** A case's status in a word; `ACTIVE` is the ordinary one, so pages show the others only. */
export function caseStatusWords(status) {
  return CASE_STATUS[status] ?? String(status || '').toLowerCase();
}

/** An item's own status: "Open" or "Closed". */
export function itemStatusWords(status) {
  return status === 'CLOSED' ? 'Closed' : status === 'OPEN' ? 'Open' : String(status || '').toLowerCase();
}
