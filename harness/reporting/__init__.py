"""From records to what people read: tables, figures, statistics, the paper report."""
